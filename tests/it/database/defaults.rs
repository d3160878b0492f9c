//! Defaults a DBA chose (`alter database ... set`, `alter role ... in database ... set`) change
//! nothing the service does: it pins what it relies on (`store::session`).

use std::time::Duration;

use chrono::Days;
use serde_json::json;
use sqlx::{PgPool, Postgres, Transaction};

use super::{alter_database, run_sql};
use crate::common::checks::{eventually, executions};
use crate::common::database::TestDatabase;
use crate::common::fixtures::{insert_book, insert_loan, open_transaction};
use crate::common::slow::slow_dates;
use crate::common::{TestApp, spawn_on_database, spawn_replica};

async fn app_on_database_with(defaults: &[&str]) -> TestApp {
    let database = TestDatabase::create().await;
    for change in defaults {
        alter_database(&database, change).await;
    }
    spawn_on_database(database, |_| {}).await
}

/// Commits `holder` once a session of the application waits for a row lock it holds: the
/// request then meets a concurrent update.
async fn commit_once_a_request_waits(pool: &PgPool, holder: Transaction<'static, Postgres>) {
    eventually(
        "a request waits for the test's row lock",
        Duration::from_secs(10),
        async || {
            let waiting: i64 = sqlx::query_scalar(
                "select count(*) from pg_stat_activity \
             where datname = current_database() and wait_event_type = 'Lock'",
            )
            .fetch_one(pool)
            .await
            .unwrap();
            waiting > 0
        },
    )
    .await;
    holder.commit().await.unwrap();
}

#[tokio::test]
async fn a_serializable_default_answers_a_payment_and_a_return_that_met_a_concurrent_update() {
    let app = app_on_database_with(&["set default_transaction_isolation = 'serializable'"]).await;
    let member = app.create_member("Ada", "ada@example.org").await["id"]
        .as_i64()
        .unwrap();
    let book = insert_book(&app.pool, "Dune").await;
    let today = app.today().await;
    let loan = insert_loan(&app.pool, member, book, today - Days::new(3), today).await;

    // A librarian's edit of the member holds its row while the payment comes in.
    let edit = open_transaction(&app.pool, "update member set name = name where id = $1", member).await;
    let pay = format!("/api/v1/members/{member}/payments");
    let (payment, ()) = tokio::join!(
        app.post(&pay, json!({ "amount_cents": 300 })),
        commit_once_a_request_waits(&app.pool, edit),
    );
    assert_eq!(payment.ok(201)["balance_cents"], -300);

    // An import's correction of the loan holds its row while the return comes in.
    let edit = open_transaction(&app.pool, "update loan set due_on = due_on where id = $1", loan).await;
    let give_back = format!("/api/v1/loans/{loan}/return");
    let (returned, ()) = tokio::join!(
        app.post(&give_back, json!({})),
        commit_once_a_request_waits(&app.pool, edit),
    );
    assert_eq!(returned.ok(200)["status"], "returned");
}

/// The service's tables in `schema`, by name.
async fn tables_in(pool: &PgPool, schema: &str) -> Vec<String> {
    sqlx::query_scalar("select tablename::text from pg_tables where schemaname = $1 order by 1")
        .bind(schema)
        .fetch_all(pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_search_path_that_puts_another_schema_first_hides_nothing() {
    let database = TestDatabase::create().await;
    let first = spawn_on_database(database.share(), |_| {}).await;
    first.create_member("Ada", "ada@example.org").await;

    // The DBA puts an empty schema first; a replica restarts.
    run_sql(&database, "create schema other").await;
    alter_database(&database, "set search_path = other, public").await;
    let restarted = spawn_replica(&first, |_| {}).await;
    let members = restarted.get("/api/v1/members").await;
    assert_eq!(
        members.ok(200)["items"][0]["name"],
        "Ada",
        "the replica reads its own tables"
    );
    restarted.create_member("Grace", "grace@example.org").await;
    assert!(
        tables_in(&first.pool, "other").await.is_empty(),
        "no second copy of the schema"
    );
    let names: Vec<String> = sqlx::query_scalar("select name from public.member order by id")
        .fetch_all(&first.pool)
        .await
        .unwrap();
    assert_eq!(names, ["Ada", "Grace"], "writes land in the service's schema");
}

#[tokio::test]
async fn a_search_path_whose_first_schema_holds_a_table_of_the_same_name_starts_and_touches_it_not() {
    let database = TestDatabase::create().await;
    run_sql(&database, "create schema other; create table other.loan (id int)").await;
    alter_database(&database, "set search_path = other, public").await;
    let app = spawn_on_database(database, |_| {}).await;
    let member = app.create_member("Ada", "ada@example.org").await["id"]
        .as_i64()
        .unwrap();
    let book = app.create_book("Dune").await["id"].as_i64().unwrap();
    app.create_loan(member, book, app.today().await).await;
    assert_eq!(
        tables_in(&app.pool, "other").await,
        ["loan"],
        "migrations touched nothing there"
    );
    let theirs: i64 = sqlx::query_scalar("select count(*) from other.loan")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(theirs, 0);
    assert!(tables_in(&app.pool, "public").await.contains(&"loan".to_owned()));
}

#[tokio::test]
async fn an_operator_may_name_the_schema() {
    let database = TestDatabase::create().await;
    let schema = finesettle::store::session::Schema::parse("library").unwrap();
    let app = spawn_on_database(database, |settings| settings.db_schema = schema).await;
    app.create_member("Ada", "ada@example.org").await;
    assert!(tables_in(&app.pool, "library").await.contains(&"member".to_owned()));
    assert!(tables_in(&app.pool, "public").await.is_empty());
}

#[tokio::test]
async fn a_short_statement_timeout_of_the_role_fails_no_date() {
    let database = TestDatabase::create().await;
    let app = spawn_on_database(database.share(), |_| {}).await;
    // From now on every new session of the role in this database gets 200 ms.
    alter_database(&database, "set statement_timeout = '200ms'").await;
    let restarted = spawn_replica(&app, |_| {}).await;
    let member = app.create_member("Ada", "ada@example.org").await["id"]
        .as_i64()
        .unwrap();
    let book = insert_book(&app.pool, "Dune").await;
    let today = restarted.today().await;
    let date = today - Days::new(1);
    insert_loan(&app.pool, member, book, date - Days::new(10), date - Days::new(5)).await;
    // The date's statements take longer than the role allows.
    slow_dates(&app.pool, Duration::from_millis(600)).await;

    let run = restarted
        .post("/api/v1/jobs/settle-fines/runs", json!({ "business_date": date }))
        .await;
    run.ok(202);
    eventually("the date settles", Duration::from_secs(30), async || {
        let finished = executions(&app.pool).await;
        finished.iter().any(|e| e.status != "RUNNING")
    })
    .await;
    let statuses: Vec<(String, Option<String>)> = executions(&app.pool)
        .await
        .into_iter()
        .map(|e| (e.status, e.error))
        .collect();
    assert!(statuses.iter().all(|(status, _)| status == "SUCCESS"), "{statuses:?}");
}

#[tokio::test]
async fn time_zone_and_date_style_defaults_change_no_date() {
    let app = app_on_database_with(&[
        "set timezone = 'Pacific/Kiritimati'",
        "set datestyle = 'SQL, DMY'",
        "set intervalstyle = 'sql_standard'",
    ])
    .await;
    let member = app.create_member("Ada", "ada@example.org").await["id"]
        .as_i64()
        .unwrap();
    let book = app.create_book("Dune").await["id"].as_i64().unwrap();
    let loan = app
        .post_loan(&json!({
            "member_id": member, "book_id": book, "borrowed_on": "2026-03-04", "due_on": "2026-03-09"
        }))
        .await;
    let loan = loan.ok(201);
    assert_eq!(
        (loan["borrowed_on"].as_str(), loan["due_on"].as_str()),
        (Some("2026-03-04"), Some("2026-03-09"))
    );
    let stored: String = sqlx::query_scalar("select due_on::text from loan where id = $1")
        .bind(loan["id"].as_i64().unwrap())
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(stored, "2026-03-09", "sqlx pins DateStyle ISO");
}

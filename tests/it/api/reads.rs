//! Reads while a settlement is open (issue 21): no read endpoint waits on a lock the settlement's
//! transaction holds. The settlement is stopped inside its date's transaction, after it accrued
//! and settled the member's fine and posted the CHARGE (its row locks all taken) and before it
//! commits; every read of the member's data must answer meanwhile, from the last committed state.

use std::time::Duration;

use chrono::{Datelike, Days, NaiveDate};
use serde_json::{Value, json};
use sqlx::{Connection, PgConnection};

use crate::common::checks::eventually;
use crate::common::fixtures::{insert_book, insert_fine, insert_loan};
use crate::common::triggers::create_trigger;
use crate::common::{READER_TOKEN, TestApp, spawn_app_with};

/// The advisory lock the test holds; the settlement's transaction waits for it when it marks its
/// execution SUCCESS, which is its last statement before the commit.
const HOLD: i64 = 2121;

/// How long a read may take while the settlement is held. Far above an answer's few milliseconds,
/// far below the hold: a read that queued behind the settlement would take until the release.
const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// A hook in the test's own database: the settlement's transaction stops when it marks its
/// execution SUCCESS, until the test releases [`HOLD`].
async fn stop_settlements_before_commit(app: &TestApp) {
    create_trigger(
        &app.pool,
        "test_hold_settlement",
        "before update on task_execution for each row when (new.status = 'SUCCESS')",
        &format!("perform pg_advisory_xact_lock({HOLD}); return new;"),
    )
    .await;
}

/// Waits until a session is waiting for [`HOLD`]: the settlement, inside its transaction.
async fn wait_until_held(app: &TestApp) {
    eventually(
        "the settlement to reach its SUCCESS",
        Duration::from_secs(10),
        async || {
            sqlx::query_scalar(
                "select exists (select from pg_locks where locktype = 'advisory' and objid = $1 and not granted)",
            )
            .bind(HOLD as i32)
            .fetch_one(&app.pool)
            .await
            .unwrap()
        },
    )
    .await;
}

/// Whether another transaction holds a lock on row `id` of `table` (a `for update nowait` fails).
async fn row_is_locked(app: &TestApp, table: &str, id: i64) -> bool {
    let mut tx = app.pool.begin().await.unwrap();
    let sql = format!("select id from {table} where id = $1 for update nowait");
    let result = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(id).execute(&mut *tx).await;
    tx.rollback().await.unwrap();
    match result {
        Ok(_) => false,
        Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some("55P03") => true,
        Err(e) => panic!("locking {table} {id}: {e}"),
    }
}

async fn read(app: &TestApp, path: &str) -> Value {
    let request = app
        .client
        .get(format!("{}{}", app.address, path))
        .bearer_auth(READER_TOKEN)
        .send();
    let response = tokio::time::timeout(READ_TIMEOUT, request)
        .await
        .unwrap_or_else(|_| panic!("GET {path} waited on the open settlement"))
        .expect("request sent");
    assert_eq!(response.status(), 200, "GET {path}");
    response.json().await.unwrap()
}

fn last_day_of_previous_month(today: NaiveDate) -> NaiveDate {
    today.with_day(1).unwrap() - Days::new(1)
}

#[tokio::test]
async fn no_read_waits_on_the_settlements_locks() {
    let probe = spawn_app_with(|_| {}).await;
    let date = last_day_of_previous_month(probe.today().await);
    drop(probe);
    let month = date.with_day(1).unwrap();
    let app = spawn_app_with(|s| {
        s.job.settle_start_date = Some(date);
        s.job.lock_at_least_for = Duration::ZERO;
    })
    .await;

    // A member whose overdue loan has a PENDING fine for the month (committed before the run, so
    // the settlement updates an existing row), and an older SETTLED fine: balance 300.
    let member = app.create_member("Ada", "ada@example.org").await["id"]
        .as_i64()
        .unwrap();
    let book = insert_book(&app.pool, "Gödel, Escher, Bach").await;
    let loan = insert_loan(&app.pool, member, book, month - Days::new(40), month + Days::new(4)).await;
    let previous_month = (month - Days::new(1)).with_day(1).unwrap();
    let old_fine = insert_fine(&app.pool, loan, previous_month, 6, 300, "SETTLED").await;
    let fine = insert_fine(&app.pool, loan, month, 1, 50, "PENDING").await;
    // The fixture accrued the fine through the month's end; the run must still update it.
    sqlx::query(
        "update fine_record set accrued_through = settle_month, overdue_days = 0, amount_cents = 0 where id = $1",
    )
    .bind(fine)
    .execute(&app.pool)
    .await
    .unwrap();
    assert_eq!(
        read(&app, &format!("/api/v1/members/{member}")).await["balance_cents"],
        300
    );

    stop_settlements_before_commit(&app).await;
    let mut holder = PgConnection::connect(app.database.url()).await.unwrap();
    sqlx::query("select pg_advisory_lock($1)")
        .bind(HOLD)
        .execute(&mut holder)
        .await
        .unwrap();

    let run = app
        .post("/api/v1/jobs/settle-fines/runs", json!({ "business_date": date }))
        .await;
    let execution = run.ok(202)["id"].as_i64().unwrap();
    wait_until_held(&app).await;

    // The open settlement holds the fine's row (it settled it), and the rows its CHARGE refers to.
    assert!(
        row_is_locked(&app, "fine_record", fine).await,
        "the settlement holds the fine"
    );

    // Every read of the member's data answers, from what was committed before the settlement.
    let got = read(&app, &format!("/api/v1/members/{member}")).await;
    assert_eq!(
        got["balance_cents"], 300,
        "the open settlement's CHARGE is not visible yet"
    );
    let members = read(&app, "/api/v1/members").await;
    assert_eq!(members["items"][0]["balance_cents"], 300);
    let ledger = read(&app, &format!("/api/v1/members/{member}/ledger")).await;
    assert_eq!(ledger["items"].as_array().unwrap().len(), 1);
    let fines = read(&app, &format!("/api/v1/fines?member_id={member}")).await;
    assert_eq!(fines["items"].as_array().unwrap().len(), 2);
    assert_eq!(read(&app, &format!("/api/v1/fines/{fine}")).await["status"], "PENDING");
    assert_eq!(
        read(&app, &format!("/api/v1/fines/{old_fine}")).await["status"],
        "SETTLED"
    );
    let loans = read(&app, &format!("/api/v1/loans?member_id={member}")).await;
    assert_eq!(loans["items"][0]["id"], loan);
    assert_eq!(read(&app, &format!("/api/v1/loans/{loan}")).await["id"], loan);
    read(&app, &format!("/api/v1/loans?member_id={member}&status=overdue")).await;
    read(&app, &format!("/api/v1/fines?loan_id={loan}&status=PENDING")).await;
    read(&app, &format!("/api/v1/members/{member}/notifications")).await;
    read(&app, &format!("/api/v1/books/{book}")).await;
    read(&app, "/api/v1/books").await;
    read(&app, "/api/v1/alerts").await;
    // The operator's views of the job, which read the lock and the records the run is writing.
    for path in [
        "/api/v1/jobs",
        "/api/v1/jobs/settle-fines",
        "/api/v1/jobs/settle-fines/executions",
        "/api/v1/jobs/settle-fines/attempts",
        "/api/v1/locks",
    ] {
        let reply = tokio::time::timeout(READ_TIMEOUT, app.get(path))
            .await
            .unwrap_or_else(|_| panic!("GET {path} waited on the open settlement"));
        reply.ok(200);
    }

    // Released, the settlement commits: the fine is settled and charged, the balance exact.
    sqlx::query("select pg_advisory_unlock($1)")
        .bind(HOLD)
        .execute(&mut holder)
        .await
        .unwrap();
    for _ in 0..200 {
        let status: String = sqlx::query_scalar("select status from task_execution where id = $1")
            .bind(execution)
            .fetch_one(&app.pool)
            .await
            .unwrap();
        if status != "RUNNING" {
            assert_eq!(status, "SUCCESS");
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let settled = read(&app, &format!("/api/v1/fines/{fine}")).await;
    assert_eq!(settled["status"], "SETTLED");
    let amount = settled["amount_cents"].as_i64().unwrap();
    assert!(amount > 0);
    assert_eq!(
        read(&app, &format!("/api/v1/members/{member}")).await["balance_cents"],
        300 + amount
    );
}

/// The connections the reads keep (`store::reads`) are tested before use once idle: a server
/// that dropped them (a restart, a failover) while the service sat idle costs no request.
#[tokio::test]
async fn reads_answer_after_the_server_dropped_their_idle_connections() {
    let app = spawn_app_with(|_| {}).await;
    let member = app.create_member("Ada", "ada@example.org").await["id"]
        .as_i64()
        .unwrap();
    for _ in 0..6 {
        read(&app, &format!("/api/v1/members/{member}")).await;
        read(&app, &format!("/api/v1/fines?member_id={member}")).await;
    }

    let dropped: i64 = sqlx::query_scalar(
        "select count(*) from (select pg_terminate_backend(pid) from pg_stat_activity
         where datname = current_database() and pid <> pg_backend_pid()) t",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert!(dropped > 0, "the service had connections");
    tokio::time::sleep(finesettle::store::reads::IDLE_CHECK + Duration::from_millis(300)).await;

    for _ in 0..6 {
        assert_eq!(read(&app, &format!("/api/v1/members/{member}")).await["id"], member);
        read(&app, &format!("/api/v1/members/{member}/ledger")).await;
        read(&app, &format!("/api/v1/fines?member_id={member}")).await;
        read(&app, &format!("/api/v1/loans?member_id={member}")).await;
    }
}

//! The classification of database errors (`store::failure`) over real errors of a real server:
//! each is provoked on PostgreSQL, not built by hand.

use finesettle::store::failure::DbFailure;
use sqlx::{Connection, PgConnection, PgPool};

use crate::common::seed::migrated_db;

async fn connection(pool: &PgPool) -> PgConnection {
    PgConnection::connect_with(&pool.connect_options()).await.unwrap()
}

async fn error_of(conn: &mut PgConnection, sql: &str) -> sqlx::Error {
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
        .execute(conn)
        .await
        .expect_err("the statement fails")
}

#[tokio::test]
async fn an_unreachable_server_is_unavailable() {
    // Port 1: nothing listens there.
    let error = PgConnection::connect("postgres://postgres@127.0.0.1:1/postgres")
        .await
        .expect_err("nothing answers");
    assert_eq!(DbFailure::of(&error), DbFailure::Unavailable, "{error:?}");
}

#[tokio::test]
async fn a_terminated_session_is_unavailable() {
    let (_db, pool) = migrated_db().await;
    let mut victim = connection(&pool).await;
    let pid: i32 = sqlx::query_scalar("select pg_backend_pid()")
        .fetch_one(&mut victim)
        .await
        .unwrap();
    sqlx::query("select pg_terminate_backend($1)")
        .bind(pid)
        .execute(&pool)
        .await
        .unwrap();
    // 57P01 (terminating connection due to administrator command), or the broken socket after it.
    let error = sqlx::query("select 1")
        .execute(&mut victim)
        .await
        .expect_err("terminated");
    assert_eq!(DbFailure::of(&error), DbFailure::Unavailable, "{error:?}");
}

#[tokio::test]
async fn a_write_on_a_read_only_node_is_unavailable() {
    let (_db, pool) = migrated_db().await;
    let mut conn = connection(&pool).await;
    let error = error_of(
        &mut conn,
        "begin read only; insert into book (title) values ('Dune'); commit",
    )
    .await;
    assert_eq!(finesettle::store::failure::sqlstate(&error).as_deref(), Some("25006"));
    assert_eq!(DbFailure::of(&error), DbFailure::Unavailable);
}

#[tokio::test]
async fn a_statement_or_lock_timeout_is_unavailable() {
    let (_db, pool) = migrated_db().await;
    let mut conn = connection(&pool).await;
    let error = error_of(&mut conn, "set statement_timeout = 20; select pg_sleep(1)").await;
    assert_eq!(finesettle::store::failure::sqlstate(&error).as_deref(), Some("57014"));
    assert_eq!(DbFailure::of(&error), DbFailure::Unavailable);

    let mut holder = connection(&pool).await;
    sqlx::raw_sql("begin; lock table book")
        .execute(&mut holder)
        .await
        .unwrap();
    let error = error_of(&mut conn, "set lock_timeout = 20; select * from book").await;
    assert_eq!(finesettle::store::failure::sqlstate(&error).as_deref(), Some("55P03"));
    assert_eq!(DbFailure::of(&error), DbFailure::Unavailable);
}

#[tokio::test]
async fn a_serialization_failure_and_a_deadlock_are_retryable() {
    let (_db, pool) = migrated_db().await;
    let book: i64 = sqlx::query_scalar("insert into book (title) values ('Dune') returning id")
        .fetch_one(&pool)
        .await
        .unwrap();
    let other: i64 = sqlx::query_scalar("insert into book (title) values ('Emma') returning id")
        .fetch_one(&pool)
        .await
        .unwrap();

    // Serialization: a repeatable-read transaction updates a row another committed after its
    // snapshot.
    let mut first = connection(&pool).await;
    sqlx::raw_sql("begin isolation level repeatable read; select count(*) from book")
        .execute(&mut first)
        .await
        .unwrap();
    sqlx::query("update book set title = 'Dune II' where id = $1")
        .bind(book)
        .execute(&pool)
        .await
        .unwrap();
    let error = sqlx::query("update book set title = 'Dune III' where id = $1")
        .bind(book)
        .execute(&mut first)
        .await
        .expect_err("a concurrent update");
    assert_eq!(finesettle::store::failure::sqlstate(&error).as_deref(), Some("40001"));
    assert_eq!(DbFailure::of(&error), DbFailure::Retryable);

    // Deadlock: two transactions each wait for the row the other holds.
    let (mut a, mut b) = (connection(&pool).await, connection(&pool).await);
    let lock = |id: i64| format!("update book set title = title where id = {id}");
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("begin; {}", lock(book))))
        .execute(&mut a)
        .await
        .unwrap();
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("begin; {}", lock(other))))
        .execute(&mut b)
        .await
        .unwrap();
    let a_waits = tokio::spawn(async move {
        let result = sqlx::raw_sql(sqlx::AssertSqlSafe(lock(other))).execute(&mut a).await;
        result.err()
    });
    // Whichever queues first, each then waits for the other: the deadlock detector ends one.
    let b_error = sqlx::raw_sql(sqlx::AssertSqlSafe(lock(book)))
        .execute(&mut b)
        .await
        .err();
    let a_error = a_waits.await.unwrap();
    let error = a_error.or(b_error).expect("one of the two is the deadlock's victim");
    assert_eq!(finesettle::store::failure::sqlstate(&error).as_deref(), Some("40P01"));
    assert_eq!(DbFailure::of(&error), DbFailure::Retryable);
}

#[tokio::test]
async fn a_check_violation_is_the_clients_and_other_errors_are_bugs() {
    let (_db, pool) = migrated_db().await;
    let mut conn = connection(&pool).await;
    let error = error_of(&mut conn, "insert into book (title) values ('   ')").await;
    assert_eq!(finesettle::store::failure::sqlstate(&error).as_deref(), Some("23514"));
    assert_eq!(DbFailure::of(&error), DbFailure::Check);

    let error = error_of(&mut conn, "select * from no_such_table").await;
    assert_eq!(DbFailure::of(&error), DbFailure::Other);
    let error = error_of(&mut conn, "insert into book (id, title) values (1, 'a'), (1, 'b')").await;
    assert_eq!(
        DbFailure::of(&error),
        DbFailure::Other,
        "a unique violation is the handler's to map"
    );
}

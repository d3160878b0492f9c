//! The database production gives the service (docs/DESIGN.md §12): defaults a DBA chose, a node
//! that turns read-only, an encoding that counts bytes, and the errors a failover brings. The
//! failover itself, on a real cluster, is in `ha`.

mod defaults;
mod encoding;
mod errors;
mod read_only;
mod unreachable;

use sqlx::{Connection, PgConnection};

use crate::common::database::TestDatabase;

/// Runs `alter database <db> <change>` (`set search_path = ...`, `reset ...`), as a DBA would:
/// it reaches every session opened afterwards that does not set its own value. From the
/// maintenance database, which stays writable when the test's is made read-only.
async fn alter_database(database: &TestDatabase, change: &str) {
    let sql = format!("alter database \"{}\" {change}", database.name());
    run_sql_in(database.maintenance_url(), &sql).await;
}

/// Runs `sql` (one or more statements, each in its own transaction) on a connection to `url`.
async fn run_sql_in(url: &str, sql: &str) {
    let mut conn = PgConnection::connect(url).await.unwrap();
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
        .execute(&mut conn)
        .await
        .unwrap();
}

/// Runs `sql` on a connection of its own to `database` (not one of the application's).
async fn run_sql(database: &TestDatabase, sql: &str) {
    run_sql_in(database.url(), sql).await;
}

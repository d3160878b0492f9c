//! Connecting, creating the database when missing, and running the migrations.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{ConnectOptions, Connection, PgConnection, PgPool};
use tracing::log::LevelFilter;

use super::schema::Step;
use crate::domain::failover::DatabaseIdentity;

/// Told the database identity every new connection finds (`None` on a node in recovery): how a
/// replica notices a promotion as soon as its pool reconnects (`crate::failover`).
pub type ConnectObserver = Arc<dyn Fn(Option<DatabaseIdentity>) + Send + Sync>;

/// The migrations under `migrations/`, embedded in the binary.
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// A statement slower than this is logged as a warning (sqlx's default is 1 s). A settlement
/// batch of 20,000 fines takes one to two seconds on a busy machine, every night, by design:
/// warning about each would bury the statements that are really stuck.
const SLOW_STATEMENT: Duration = Duration::from_secs(10);

/// Opens a pool on `database_url`, creating the database first when it does not exist.
pub async fn connect(database_url: &str, max_connections: u32) -> anyhow::Result<PgPool> {
    connect_observed(database_url, max_connections, None).await
}

/// [`connect`], telling `observer` the identity each new connection finds: one more round trip
/// per connection opened, none per statement.
pub async fn connect_observed(
    database_url: &str,
    max_connections: u32,
    observer: Option<ConnectObserver>,
) -> anyhow::Result<PgPool> {
    let options = PgConnectOptions::from_str(database_url)?.log_slow_statements(LevelFilter::Warn, SLOW_STATEMENT);
    create_database_if_missing(&options).await?;
    let pool = PgPoolOptions::new()
        .max_connections(max_connections)
        .acquire_timeout(Duration::from_secs(5))
        // sqlx pings every connection it hands out: a round trip before each statement, as
        // costly as the statement on a busy replica (load/results/reads.md). Only a connection
        // that sat idle is tested now; one in use a moment ago is alive or fails its statement.
        .test_before_acquire(false)
        .before_acquire(|connection, meta| {
            Box::pin(async move {
                if meta.idle_for > super::reads::IDLE_CHECK {
                    connection.ping().await?;
                }
                Ok(true)
            })
        })
        .after_connect(move |connection, _meta| {
            let observer = observer.clone();
            Box::pin(async move {
                if let Some(observer) = observer {
                    // A connection that cannot tell its identity still serves: the minute's check
                    // reads it again.
                    match super::database_identity::read(connection).await {
                        Ok(identity) => observer(identity),
                        Err(error) => tracing::debug!(%error, "could not read the database identity"),
                    }
                }
                Ok(())
            })
        })
        .connect_with(options)
        .await?;
    Ok(pool)
}

/// Brings the schema up to date, after checking that this release can serve it (a newer
/// release's expansion is fine, its contract step is not: see [`super::schema`]). Safe to run
/// from several replicas at once: sqlx takes an advisory lock around the migrations.
pub async fn migrate(pool: &PgPool) -> anyhow::Result<()> {
    super::schema::guard_and_migrate(pool, &MIGRATOR, Step::Expand).await
}

/// [`migrate`], then this release's contract migrations: what the previous release relied on is
/// removed, and it can no longer serve the database. Only `finesettle migrate --contract` runs
/// it, once every replica runs this release.
pub async fn migrate_contract(pool: &PgPool) -> anyhow::Result<()> {
    super::schema::guard_and_migrate(pool, &MIGRATOR, Step::Contract).await
}

async fn create_database_if_missing(options: &PgConnectOptions) -> anyhow::Result<()> {
    let name = options.get_database().unwrap_or("postgres").to_owned();
    let maintenance = options.clone().database("postgres");
    let mut conn = PgConnection::connect_with(&maintenance).await?;
    let exists: bool = sqlx::query_scalar("select exists (select 1 from pg_database where datname = $1)")
        .bind(&name)
        .fetch_one(&mut conn)
        .await?;
    if !exists {
        // Identifiers cannot be bound; quote it. Two replicas racing here: one wins, the other's
        // duplicate_database error is harmless.
        let sql = format!("create database \"{}\"", name.replace('"', "\"\""));
        match sqlx::raw_sql(sqlx::AssertSqlSafe(sql)).execute(&mut conn).await {
            Ok(_) => tracing::info!(database.name = %name, "created the database"),
            Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some("42P04") => {}
            Err(e) => return Err(e.into()),
        }
    }
    conn.close().await?;
    Ok(())
}

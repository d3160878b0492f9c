//! Connecting, creating the database when missing, and running the migrations.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{ConnectOptions, Connection, PgConnection, PgPool};
use tracing::log::LevelFilter;

use super::failure;
use super::schema::Step;
use super::session::{self, Schema};
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

/// [`connect_in`] the `public` schema: the tests' and the benchmarks' pools.
pub async fn connect(database_url: &str, max_connections: u32) -> anyhow::Result<PgPool> {
    connect_in(database_url, &Schema::public(), max_connections).await
}

/// Opens a pool on `database_url` whose connections work in `schema` with the service's pinned
/// settings ([`session`]), creating the database first when it does not exist, and the schema.
/// A database that is not UTF8 is refused before anything is created in it.
pub async fn connect_in(database_url: &str, schema: &Schema, max_connections: u32) -> anyhow::Result<PgPool> {
    connect_observed(database_url, schema, max_connections, None).await
}

/// [`connect_in`], telling `observer` the identity each new connection finds: one more round
/// trip per connection opened, none per statement.
pub async fn connect_observed(
    database_url: &str,
    schema: &Schema,
    max_connections: u32,
    observer: Option<ConnectObserver>,
) -> anyhow::Result<PgPool> {
    let options = PgConnectOptions::from_str(database_url)?.log_slow_statements(LevelFilter::Warn, SLOW_STATEMENT);
    create_database_if_missing(&options).await?;
    let options = session::pinned(options, schema);
    prepare_database(&options, schema).await?;
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
        // After a write met a read-only node (a failover behind the proxy), a connection still on
        // one is closed when it comes back, so the next one goes through the proxy again and
        // finds the new primary (store::failure).
        .after_release(|connection, _| {
            Box::pin(async move {
                if failure::read_only_lately() {
                    return Ok(!failure::on_read_only_node(connection).await?);
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

/// Refuses a database whose encoding is not UTF8, naming it and how to make one that is: in
/// `SQL_ASCII` PostgreSQL counts bytes, not characters, so a valid 500-character title of `é`
/// would break the length checks. Then creates `schema` when it is missing.
async fn prepare_database(options: &PgConnectOptions, schema: &Schema) -> anyhow::Result<()> {
    let mut conn = PgConnection::connect_with(options).await?;
    let (name, encoding): (String, String) =
        sqlx::query_as("select current_database()::text, pg_encoding_to_char(encoding)::text from pg_database where datname = current_database()")
            .fetch_one(&mut conn)
            .await?;
    if encoding != "UTF8" {
        anyhow::bail!(
            "the database {name:?} is encoded {encoding}, not UTF8: finesettle counts characters, which \
             {encoding} cannot. Create a UTF8 database (createdb --encoding=UTF8 --template=template0 NAME, \
             or create database NAME encoding 'UTF8' template template0) and point DATABASE_URL at it"
        );
    }
    if *schema != Schema::public() {
        // A plain identifier (Schema::parse), so it is written as is.
        let sql = format!("create schema if not exists {}", schema.as_str());
        sqlx::raw_sql(sqlx::AssertSqlSafe(sql)).execute(&mut conn).await?;
    }
    conn.close().await?;
    Ok(())
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
        // duplicate_database error is harmless. UTF8 whatever the cluster's template is
        // (template0 is the one template any encoding may be copied from).
        let sql = format!(
            "create database \"{}\" encoding 'UTF8' template template0",
            name.replace('"', "\"\"")
        );
        match sqlx::raw_sql(sqlx::AssertSqlSafe(sql)).execute(&mut conn).await {
            Ok(_) => tracing::info!(database.name = %name, "created the database"),
            Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some("42P04") => {}
            Err(e) => return Err(e.into()),
        }
    }
    conn.close().await?;
    Ok(())
}

//! Helpers shared by the benchmark examples under `load/` (`audit_bench`, `lock_bench`,
//! `reminders_bench`, `settlement_bench`): the scratch databases they drop and create, their
//! `BENCH_*` settings and the units they print. Each includes it with
//! `#[path = "common/mod.rs"] mod common;`.

use std::time::Duration;

use finesettle::store::database;
use sqlx::{AssertSqlSafe, Connection, PgConnection, PgPool};

/// The scratch databases of a benchmark, on the server of `DATABASE_URL`: each created afresh
/// for the run, and dropped at its end unless `BENCH_KEEP=1`.
pub struct Scratch {
    server: String,
    keep: bool,
}

impl Scratch {
    /// The server of `DATABASE_URL` ([`server_url`]), keeping the databases if `BENCH_KEEP=1`.
    pub fn from_env() -> Self {
        Scratch {
            server: server_url(),
            keep: std::env::var("BENCH_KEEP").is_ok_and(|v| v == "1"),
        }
    }

    /// Database `name` dropped and created again, empty or as a copy of `template`, and a pool
    /// of at most `connections` connections to it.
    pub async fn fresh(&self, name: &str, template: Option<&str>, connections: u32) -> anyhow::Result<PgPool> {
        recreate_database(&self.server, name, template).await?;
        database::connect(&database_url(&self.server, name), connections).await
    }

    /// Drops `names` at the end of the run, unless `BENCH_KEEP=1` keeps them.
    pub async fn clean_up(&self, names: &[&str]) -> anyhow::Result<()> {
        if !self.keep {
            for name in names {
                drop_database(&self.server, name).await?;
            }
        }
        Ok(())
    }
}

/// `postgres://user@host:port` from `DATABASE_URL` (without database name or query), so that a
/// benchmark names its own scratch database and can never drop one someone uses.
fn server_url() -> String {
    let configured =
        std::env::var("DATABASE_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned());
    let without_query = configured.split('?').next().unwrap_or_default();
    match without_query.rsplit_once('/') {
        Some((server, _)) if server.contains("//") && !server.ends_with('/') => server.to_owned(),
        _ => without_query.trim_end_matches('/').to_owned(),
    }
}

/// The URL of database `name` on `server` (from [`server_url`]).
fn database_url(server: &str, name: &str) -> String {
    format!("{server}/{name}")
}

/// Drops `name` and creates it again, empty or as a copy of `template`, so that every run starts
/// from the same state.
async fn recreate_database(server: &str, name: &str, template: Option<&str>) -> anyhow::Result<()> {
    drop_database(server, name).await?;
    let mut conn = PgConnection::connect(&database_url(server, "postgres")).await?;
    let sql = match template {
        Some(t) => format!("create database \"{name}\" template \"{t}\""),
        None => format!("create database \"{name}\""),
    };
    sqlx::raw_sql(AssertSqlSafe(sql)).execute(&mut conn).await?;
    conn.close().await?;
    Ok(())
}

/// Drops `name` if it exists, disconnecting whoever is still on it (a run that failed halfway).
async fn drop_database(server: &str, name: &str) -> anyhow::Result<()> {
    let mut conn = PgConnection::connect(&database_url(server, "postgres")).await?;
    sqlx::raw_sql(AssertSqlSafe(format!(
        "drop database if exists \"{name}\" with (force)"
    )))
    .execute(&mut conn)
    .await?;
    conn.close().await?;
    Ok(())
}

/// The setting `name` parsed, or `default` when unset; a value that does not parse is an error
/// rather than silently the default.
pub fn env_or<T: std::str::FromStr>(name: &str, default: T) -> anyhow::Result<T>
where
    T::Err: std::fmt::Display,
{
    match std::env::var(name) {
        Ok(v) => v.parse().map_err(|e| anyhow::anyhow!("{name}={v}: {e}")),
        Err(_) => Ok(default),
    }
}

/// `count` per second of `time` (a zero time counts as a nanosecond rather than dividing by zero).
pub fn per_second(count: f64, time: Duration) -> f64 {
    count / time.as_secs_f64().max(1e-9)
}

/// Seconds as milliseconds, for printing. Seconds as `f64` rather than a `Duration`, because
/// differences of means can be negative.
pub fn ms(seconds: f64) -> f64 {
    seconds * 1000.0
}

//! Helpers shared by the benchmark examples under `load/` (`lock_bench`, `reminders_bench`,
//! `settlement_bench`): the scratch databases they drop and create, their `BENCH_*` settings and
//! the units they print. Each includes it with `#[path = "common/mod.rs"] mod common;`.

use std::time::Duration;

use sqlx::{AssertSqlSafe, Connection, PgConnection};

/// `postgres://user@host:port` from `DATABASE_URL` (without database name or query), so that a
/// benchmark names its own scratch database and can never drop one someone uses.
pub fn server_url() -> String {
    let configured =
        std::env::var("DATABASE_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned());
    let without_query = configured.split('?').next().unwrap_or_default();
    match without_query.rsplit_once('/') {
        Some((server, _)) if server.contains("//") && !server.ends_with('/') => server.to_owned(),
        _ => without_query.trim_end_matches('/').to_owned(),
    }
}

/// The URL of database `name` on `server` (from [`server_url`]).
pub fn database_url(server: &str, name: &str) -> String {
    format!("{server}/{name}")
}

/// Drops `name` and creates it again, empty or as a copy of `template`, so that every run starts
/// from the same state.
pub async fn recreate_database(server: &str, name: &str, template: Option<&str>) -> anyhow::Result<()> {
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
pub async fn drop_database(server: &str, name: &str) -> anyhow::Result<()> {
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

//! The API under concurrent clients across three replicas, while a settlement runs.
//!
//! Run with `load/api-load`, which builds the service, seeds a scratch database, starts the three
//! replicas (scheduler off, so only this program triggers settlements) and then runs this. Three
//! phases on the same data:
//!
//! 1. **Settlement alone**: `POST /api/v1/jobs/settle-fines/runs` for one business date (by
//!    default the last day of the previous month: every fine of that month is accrued and
//!    settled, the heaviest date there is), timed from the request until its execution reads
//!    SUCCESS; then the settlement's results are cleared for the next run.
//! 2. **API alone**: `LOAD_CLIENTS` closed-loop clients spread over the replicas, each cycling
//!    through create loan, get member, list loans, return loan, for `LOAD_SECONDS`.
//! 3. **API during the settlement**: the same clients; after a short warm-up the same date is
//!    settled again on the same data. Requests are counted while the settlement runs.
//!
//! Writes `api-load.md` (tables) and `api-load.svg` (chart) into `LOAD_OUT`. Reports figures and
//! asserts nothing about time; it fails only when a request or the settlement does not do its job
//! (a wrong status counts as an error in the table, a failed settlement stops the run).

mod api;
mod clients;
mod report;
mod settle;
mod stats;

use std::time::Duration;

use anyhow::Context;
use chrono::NaiveDate;
use sqlx::postgres::PgPoolOptions;

use crate::api::Api;
use crate::clients::Setup;
use crate::report::Report;

/// Read from the environment (`load/api-load` sets them).
struct Config {
    urls: Vec<String>,
    token: String,
    database_url: String,
    date: Option<NaiveDate>,
    clients: usize,
    api_seconds: u64,
    max_seconds: u64,
    out: String,
}

impl Config {
    fn from_env() -> anyhow::Result<Self> {
        let var = |name: &str, default: &str| std::env::var(name).unwrap_or_else(|_| default.to_owned());
        let number = |name: &str, default: u64| -> anyhow::Result<u64> {
            var(name, &default.to_string())
                .parse()
                .with_context(|| format!("{name}: a whole number"))
        };
        let date = match std::env::var("LOAD_DATE") {
            Ok(v) if !v.is_empty() => Some(v.parse().context("LOAD_DATE: YYYY-MM-DD")?),
            _ => None,
        };
        Ok(Config {
            urls: var(
                "LOAD_URLS",
                "http://127.0.0.1:8081,http://127.0.0.1:8082,http://127.0.0.1:8083",
            )
            .split(',')
            .map(|u| u.trim_end_matches('/').to_owned())
            .collect(),
            token: var("LOAD_TOKEN", "load-admin-token-0123456789"),
            database_url: var("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/finesettle_load"),
            date,
            clients: number("LOAD_CLIENTS", 12)? as usize,
            api_seconds: number("LOAD_SECONDS", 20)?,
            max_seconds: number("LOAD_MAX_SECONDS", 180)?,
            out: var("LOAD_OUT", "load/results"),
        })
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let config = Config::from_env()?;
    let pool = PgPoolOptions::new()
        .max_connections(2)
        .connect(&config.database_url)
        .await
        .context("connecting to the load database")?;
    let api = Api::new(config.urls.clone(), &config.token)?;
    let date = match config.date {
        Some(date) => date,
        None => settle::last_day_of_previous_month(&pool).await?,
    };
    let max = Duration::from_secs(config.max_seconds);
    let data = settle::describe_data(&pool).await?;
    println!(
        "{} loans, {} members; settling {date} on {} replicas with {} clients",
        data.loans,
        data.members,
        config.urls.len(),
        config.clients
    );

    println!("1/3 settlement alone ...");
    settle::prepare(&pool, data.last_seeded_loan).await?;
    let settle_alone = settle::run(&api, &pool, date, max).await?;
    println!("    {}", settle_alone.summary());

    println!("2/3 API alone for {} s ...", config.api_seconds);
    settle::prepare(&pool, data.last_seeded_loan).await?;
    let setup = Setup::create(&api, &pool, config.clients).await?;
    let api_alone = clients::run_for(&api, &setup, Duration::from_secs(config.api_seconds)).await;
    println!("    {}", api_alone.summary());

    println!("3/3 API during the settlement ...");
    settle::prepare(&pool, data.last_seeded_loan).await?;
    let (api_during, settled) = clients::run_during(&api, &setup, settle::run(&api, &pool, date, max)).await;
    let settle_under_load = settled?;
    println!("    {}", settle_under_load.summary());
    println!("    {}", api_during.summary());
    settle::prepare(&pool, data.last_seeded_loan).await?;

    let report = Report {
        date,
        data,
        replicas: config.urls.len(),
        clients: config.clients,
        cores: std::thread::available_parallelism().map_or(0, |n| n.get()),
        settle_alone,
        settle_under_load,
        api_alone,
        api_during,
    };
    let (table, chart) = report.write(&config.out)?;
    println!("wrote {table} and {chart}");
    Ok(())
}

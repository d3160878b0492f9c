//! The settlement side: the data set, a timed run through the API, and the reset between runs.

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use chrono::NaiveDate;
use reqwest::{Method, StatusCode};
use serde_json::json;
use sqlx::PgPool;

use crate::api::Api;

const TASK: &str = "settle-fines";

/// What the replicas work on.
#[derive(Debug, Clone)]
pub struct DataSet {
    pub loans: i64,
    pub members: i64,
    /// Loans above this id were made by the load clients; they are removed between phases.
    pub last_seeded_loan: i64,
}

pub async fn describe_data(pool: &PgPool) -> anyhow::Result<DataSet> {
    let (loans, members, last): (i64, i64, Option<i64>) =
        sqlx::query_as("select (select count(*) from loan), (select count(*) from member), (select max(id) from loan)")
            .fetch_one(pool)
            .await?;
    Ok(DataSet {
        loans,
        members,
        last_seeded_loan: last.context("the load database has no loans: seed it first")?,
    })
}

/// The last day of the previous month in the business zone (by the database clock): the date on
/// which a month's fines are all accrued and all become final.
pub async fn last_day_of_previous_month(pool: &PgPool) -> anyhow::Result<NaiveDate> {
    let date: NaiveDate = sqlx::query_scalar(
        "select (date_trunc('month', (now() at time zone 'Asia/Shanghai')::date) - interval '1 day')::date",
    )
    .fetch_one(pool)
    .await?;
    Ok(date)
}

/// Brings the data back to what was seeded, so that every phase starts from the same state:
/// no settlement results, none of the loans the clients made, every seeded loan queued for
/// accrual once (as `finesettle seed` leaves the `loan_change` queue), fresh statistics, dirty
/// pages flushed, and the loans read once so that every run starts with the same warm cache.
pub async fn prepare(pool: &PgPool, last_seeded_loan: i64) -> anyhow::Result<()> {
    // alert and alert_delivery reference task_execution; none exist with the scheduler off, but
    // truncate needs to know. loan_change references the loans the clients made.
    sqlx::raw_sql(
        "truncate ledger_entry, fine_record, alert_delivery, alert, task_execution, task_attempt, loan_change",
    )
    .execute(pool)
    .await?;
    sqlx::query("delete from loan where id > $1")
        .bind(last_seeded_loan)
        .execute(pool)
        .await?;
    sqlx::raw_sql("insert into loan_change (loan_id) select id from loan order by id")
        .execute(pool)
        .await?;
    sqlx::raw_sql("vacuum analyze loan, loan_change, fine_record, ledger_entry, task_execution")
        .execute(pool)
        .await?;
    sqlx::raw_sql("checkpoint").execute(pool).await?;
    sqlx::raw_sql("select count(*), sum(daily_fine_cents) from loan")
        .execute(pool)
        .await?;
    Ok(())
}

/// One timed settlement of a business date.
#[derive(Debug, Clone)]
pub struct SettleRun {
    pub date: NaiveDate,
    /// The execution's `affected_rows`: fines accrued plus fines settled (or voided).
    pub rows: i64,
    /// From sending the request until its execution was seen SUCCESS (polled every 20 ms).
    pub elapsed: Duration,
    pub replica: String,
}

impl SettleRun {
    pub fn rows_per_second(&self) -> f64 {
        self.rows as f64 / self.elapsed.as_secs_f64()
    }

    pub fn summary(&self) -> String {
        format!(
            "settled {} on {}: {} rows in {:.2} s, {:.0} rows/s",
            self.date,
            self.replica,
            self.rows,
            self.elapsed.as_secs_f64(),
            self.rows_per_second()
        )
    }
}

/// Settles `date` through `POST /api/v1/jobs/settle-fines/runs` on the first replica and waits
/// for its execution to end, at most `max`.
///
/// The execution's own `started_at`/`finished_at` are not used: the time is measured here, from
/// the request to the SUCCESS, which is what an operator waits.
pub async fn run(api: &Api, pool: &PgPool, date: NaiveDate, max: Duration) -> anyhow::Result<SettleRun> {
    let started = Instant::now();
    let execution = api
        .expect(
            0,
            Method::POST,
            &format!("/api/v1/jobs/{TASK}/runs"),
            Some(&json!({ "business_date": date })),
            StatusCode::ACCEPTED,
        )
        .await?;
    let id = execution["id"]
        .as_i64()
        .context("the run's answer has no execution id")?;
    let replica = execution["instance_id"].as_str().unwrap_or("?").to_owned();
    loop {
        let (status, rows, error): (String, i64, Option<String>) =
            sqlx::query_as("select status, affected_rows, error from task_execution where id = $1")
                .bind(id)
                .fetch_one(pool)
                .await?;
        match status.as_str() {
            "SUCCESS" => {
                return Ok(SettleRun {
                    date,
                    rows,
                    elapsed: started.elapsed(),
                    replica,
                });
            }
            "RUNNING" if started.elapsed() < max => tokio::time::sleep(Duration::from_millis(20)).await,
            "RUNNING" => bail!("the settlement of {date} is still running after {max:?} (LOAD_MAX_SECONDS)"),
            _ => bail!("the settlement of {date} ended {status}: {}", error.unwrap_or_default()),
        }
    }
}

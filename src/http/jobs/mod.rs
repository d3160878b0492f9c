//! `/api/v1/jobs`: the settlement job's schedule, executions, attempts, manual runs,
//! backfills and audits (admin).

mod attempts;
mod audit;
mod backfill;
mod executions;
mod get;
mod list;
mod run;

use chrono::{DateTime, NaiveDate, Utc};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::error::ApiError;
use super::locks::Lock;
use crate::domain::business_date;
use crate::jobs::{Plan, Refused, SettleJob, Started};
use crate::settlement::Trigger;
use crate::state::AppState;
use crate::store;
use crate::store::attempts::AttemptRow;
use crate::store::executions::ExecutionRow;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list::list_jobs))
        .routes(routes!(get::get_job))
        .routes(routes!(executions::list_executions))
        .routes(routes!(attempts::list_attempts))
        .routes(routes!(run::run_job))
        .routes(routes!(backfill::backfill_job))
        .routes(routes!(audit::audit_month))
}

/// The one job this service runs, by name; 404 for any other name.
fn job_named<'a>(state: &'a AppState, name: &str) -> Result<&'a SettleJob, ApiError> {
    if name == state.job.task_name() {
        Ok(&state.job)
    } else {
        Err(ApiError::NotFound("job"))
    }
}

/// A scheduled job and its state.
#[derive(Debug, Serialize, ToSchema)]
pub struct Job {
    pub name: String,
    /// Six fields, seconds first, evaluated in `time_zone`.
    pub cron: String,
    pub time_zone: String,
    /// The next fire instants, in UTC and in the business zone.
    pub next_fires: Vec<Fire>,
    /// The latest business date settled (SUCCESS).
    pub last_success_date: Option<NaiveDate>,
    pub last_execution: Option<Execution>,
    /// The lock row, if the job ever ran.
    pub lock: Option<Lock>,
    pub lock_at_most_for_seconds: u64,
    pub lock_at_least_for_seconds: u64,
    pub backfill_max_days: u32,
}

/// One fire instant, twice.
#[derive(Debug, Serialize, ToSchema)]
pub struct Fire {
    pub utc: DateTime<Utc>,
    /// The same instant in the business zone, RFC 3339 with its offset.
    pub business: String,
    /// The business date this fire settles (the day before its local date).
    pub settles: NaiveDate,
}

/// One business date worked on by one run.
#[derive(Debug, Serialize, ToSchema)]
pub struct Execution {
    pub id: i64,
    pub task_name: String,
    pub business_date: NaiveDate,
    /// `cron`, `startup` or `manual`.
    pub trigger: String,
    pub instance_id: String,
    pub fencing_token: i64,
    pub started_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
    /// `RUNNING`, `SUCCESS` or `FAILED`.
    pub status: String,
    pub affected_rows: i64,
    pub error: Option<String>,
}

impl From<ExecutionRow> for Execution {
    fn from(row: ExecutionRow) -> Self {
        Execution {
            id: row.id,
            task_name: row.task_name,
            business_date: row.business_date,
            trigger: row.trigger,
            instance_id: row.instance_id,
            fencing_token: row.fencing_token,
            started_at: row.started_at,
            finished_at: row.finished_at,
            status: row.status,
            affected_rows: row.affected_rows,
            error: row.error,
        }
    }
}

/// One fire as one replica handled it: the attempt timeline.
#[derive(Debug, Serialize, ToSchema)]
pub struct Attempt {
    pub id: i64,
    pub task_name: String,
    pub trigger: String,
    pub instance_id: String,
    /// The scheduled instant for cron fires; the request time otherwise.
    pub fired_at: DateTime<Utc>,
    pub recorded_at: DateTime<Utc>,
    /// `WON`, `HELD`, `BUSY`, `LOST_LEASE`, `UNAVAILABLE` or `NOTHING_TO_DO`.
    pub outcome: String,
    pub fencing_token: Option<i64>,
    /// Who held the lock, for `HELD`.
    pub holder: Option<String>,
    pub detail: Option<String>,
}

impl From<AttemptRow> for Attempt {
    fn from(row: AttemptRow) -> Self {
        Attempt {
            id: row.id,
            task_name: row.task_name,
            trigger: row.trigger,
            instance_id: row.instance_id,
            fired_at: row.fired_at,
            recorded_at: row.recorded_at,
            outcome: row.outcome,
            fencing_token: row.fencing_token,
            holder: row.holder,
            detail: row.detail,
        }
    }
}

/// A refused manual run or backfill, as the client sees it.
impl From<Refused> for ApiError {
    fn from(refused: Refused) -> Self {
        match refused {
            Refused::Held { .. } => ApiError::conflict("lock_held", refused.to_string()),
            Refused::Busy => ApiError::conflict("job_running", refused.to_string()),
            Refused::NothingToDo => ApiError::conflict("already_settled", "every requested date is already settled"),
            Refused::BeforeStart(before) => ApiError::invalid(
                "business_date",
                format!("{before}; set FINESETTLE_SETTLE_START_DATE to settle earlier dates"),
            ),
            Refused::Unavailable(_) | Refused::ShuttingDown => ApiError::Unavailable(refused.to_string()),
        }
    }
}

/// Checks that `from..=to` are dates that had ended at `now` (before today in the job's zone).
fn ended_dates(
    job: &SettleJob,
    now: DateTime<Utc>,
    from: NaiveDate,
    to: NaiveDate,
    field_from: &str,
    field_to: &str,
) -> Result<(), ApiError> {
    let today = business_date(now, job.business_tz());
    if to >= today {
        return Err(ApiError::invalid(
            field_to,
            format!("must be a business date that has ended (before {today})"),
        ));
    }
    if from > to {
        return Err(ApiError::invalid(field_from, "must not be after `to`"));
    }
    Ok(())
}

/// The database's clock: a manual run is checked and timed by it, like every other fire, and
/// read once per request so the check and the run agree on what "today" is.
async fn database_now(state: &AppState) -> Result<DateTime<Utc>, ApiError> {
    Ok(store::clock::now(&state.pool).await?)
}

/// Starts a manual run of `dates` fired at `now`.
async fn start_manual(job: &SettleJob, now: DateTime<Utc>, dates: Vec<NaiveDate>) -> Result<Started, ApiError> {
    Ok(job.start(Trigger::Manual, now, Plan::Dates(dates)).await?)
}

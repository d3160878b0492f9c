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
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, IntoResponses, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::error::ApiError;
use super::locks::Lock;
use super::resource::{Resource, not_found};
use crate::domain::{RangeError, TaskName};
use crate::jobs::{Activity, Refused, Request, SettleJob, Started};
use crate::settlement::Trigger;
use crate::state::AppState;
use crate::store;
pub use crate::store::attempts::Attempt;
pub use crate::store::executions::Execution;

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

/// The `{name}` of a job's records and actions (`/{name}/…`), read and documented. It does not
/// look the job up: [`job_named`] does, in the handler, so that a bad query or body is answered
/// before the 404 of another name, as on every route.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
struct JobPath {
    /// Job name
    name: String,
}

/// The one job this service runs, by name; 404 for any other name.
fn job_named<'a>(state: &'a AppState, name: &str) -> Result<&'a SettleJob, ApiError> {
    if name == state.job.task_name().as_str() {
        Ok(&state.job)
    } else {
        Err(not_found::<Job>())
    }
}

/// A scheduled job and its state.
#[derive(Debug, Serialize, ToSchema)]
pub struct Job {
    #[schema(value_type = String)]
    pub name: TaskName,
    /// Six fields, seconds first, evaluated in `time_zone`.
    pub cron: String,
    pub time_zone: &'static str,
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

impl Resource for Job {
    const NAME: &'static str = "job";
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

/// The request fields an operator's range came in: a bad range is answered on the field at fault.
struct RangeFields {
    from: &'static str,
    to: &'static str,
}

/// A refused manual run or backfill, as the client sees it.
fn refused(refused: Refused, fields: RangeFields) -> ApiError {
    match refused {
        Refused::Invalid(RangeError::NotEnded { today, .. }) => ApiError::invalid(
            fields.to,
            format!("must be a business date that has ended (before {today})"),
        ),
        Refused::Invalid(RangeError::Reversed { .. }) => ApiError::invalid(fields.from, "must not be after `to`"),
        Refused::Invalid(RangeError::TooLong { days, max }) => ApiError::invalid(
            fields.to,
            format!("the range has {days} dates; at most {max} (FINESETTLE_BACKFILL_MAX_DAYS)"),
        ),
        Refused::Held { .. } => ApiError::conflict("lock_held", refused.to_string()),
        // A fire of this replica is taking the lock (a takeover waits for the previous
        // holder's transaction) or walking its dates: both pass, so both are a 409.
        Refused::Busy(Activity::Starting { .. }) => ApiError::conflict("job_starting", refused.to_string()),
        Refused::Busy(Activity::Walking { .. }) => ApiError::conflict("job_running", refused.to_string()),
        Refused::NothingToDo => ApiError::conflict("already_settled", "every requested date is already settled"),
        Refused::BeforeStart(before) => ApiError::invalid(
            fields.from,
            format!("{before}; set FINESETTLE_SETTLE_START_DATE to settle earlier dates"),
        ),
        Refused::Unavailable(_) | Refused::ShuttingDown => ApiError::Unavailable(refused.to_string()),
    }
}

/// The 503 of a manual run or backfill ([`refused`]).
#[derive(IntoResponses)]
#[response(
    status = 503,
    description = "The lock store is unavailable or the service is stopping"
)]
struct Unavailable;

/// Starts an operator's run of `from..=to` (trigger `manual`), fired at the database's clock: a
/// manual run is checked and timed by it, like every other fire.
async fn start_manual(
    state: &AppState,
    job: &SettleJob,
    request: Request,
    fields: RangeFields,
) -> Result<Started, ApiError> {
    let now = store::clock::now(&state.pool).await?;
    job.start(Trigger::Manual, now, request)
        .await
        .map_err(|error| refused(error, fields))
}

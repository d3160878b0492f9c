use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use chrono::NaiveDate;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{Execution, database_now, ended_dates, job_named, start_manual};
use crate::http::dates;
use crate::http::error::ApiError;
use crate::http::extract::{Json, Path};
use crate::state::AppState;
use crate::store;

#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RunRequest {
    /// The business date to settle (YYYY-MM-DD); it must have ended.
    #[serde(deserialize_with = "dates::date")]
    #[schema(value_type = String, format = Date)]
    pub business_date: NaiveDate,
}

/// Settles one business date now, through the job's lock, fencing and records. Answers 202 with
/// the execution as soon as it is RUNNING; follow it in the executions list.
///
/// When earlier dates (from the start date on) have no SUCCESS, the run settles them first,
/// oldest first, and the execution answered is the first of them: a date settled after a gap
/// would finalise months whose earlier days were never accrued.
#[utoipa::path(
    post, path = "/{name}/runs", tag = "jobs",
    params(("name" = String, Path, description = "Job name")),
    request_body = RunRequest,
    responses(
        (status = 202, description = "Started", body = Execution),
        (status = 404, description = "No such job"),
        (status = 409, description = "The lock is held, the job is running here, or the date is already settled"),
        (status = 422, description = "Invalid date, or a date before the job's start date"),
        (status = 503, description = "The lock store is unavailable or the service is stopping"),
    ),
)]
pub async fn run_job(
    State(state): State<AppState>,
    Path(name): Path<String>,
    Json(body): Json<RunRequest>,
) -> Result<(StatusCode, Json<Execution>), ApiError> {
    let job = job_named(&state, &name)?;
    let date = body.business_date;
    let now = database_now(&state).await?;
    ended_dates(job, now, date, date, "business_date", "business_date")?;
    let started = start_manual(job, now, vec![date]).await?;
    // The first date of the run: the requested one, or the earliest date without SUCCESS before
    // it, which the run settles first.
    let first = started.dates.first().copied().unwrap_or(date);
    let execution = wait_for_execution(&state, job.task_name(), first, started.fencing_token).await?;
    Ok((StatusCode::ACCEPTED, Json(execution)))
}

/// The run inserts its RUNNING record right after winning the lock; wait for it (briefly).
async fn wait_for_execution(state: &AppState, task: &str, date: NaiveDate, token: i64) -> Result<Execution, ApiError> {
    for _ in 0..250 {
        if let Some(row) = store::executions::find_by_token(&state.pool, task, date, token).await? {
            return Ok(row);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Err(ApiError::Internal(anyhow::anyhow!(
        "the run started but its execution record did not appear within 5 s"
    )))
}

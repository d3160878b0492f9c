use axum::extract::State;
use axum::http::StatusCode;
use chrono::NaiveDate;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{Execution, Job, JobPath, RangeFields, Unavailable, job_named, start_manual};
use crate::http::dates;
use crate::http::error::ApiError;
use crate::http::extract::{Json, Path};
use crate::http::resource::NoSuch;
use crate::jobs::Request;
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
    params(JobPath),
    responses(
        (status = 202, description = "Started", body = Execution),
        NoSuch<Job>,
        (status = 409, description = "The lock is held, the job is running here, or the date is already settled"),
        (status = 422, description = "Invalid date, or a date before the job's start date"),
        Unavailable,
    ),
)]
pub async fn run_job(
    State(state): State<AppState>,
    Path(JobPath { name }): Path<JobPath>,
    Json(body): Json<RunRequest>,
) -> Result<(StatusCode, Json<Execution>), ApiError> {
    let job = job_named(&state, &name)?;
    let fields = RangeFields {
        from: "business_date",
        to: "business_date",
    };
    let mut started = start_manual(&state, job, Request::date(body.business_date), fields).await?;
    // The first date of the run: the requested one, or the earliest date without SUCCESS before
    // it, which the run settles first. The walk tells its execution as soon as it is RUNNING.
    let Some(execution_id) = started.first_execution().await else {
        let report = started.wait().await;
        let why = report.walk.stopped_at().and_then(|outcome| outcome.error.clone());
        return Err(ApiError::Internal(anyhow::anyhow!(
            "the run stopped before its first date had an execution record: {}",
            why.unwrap_or_else(|| "the service is stopping".to_owned())
        )));
    };
    let execution = store::executions::find(&state.pool, execution_id)
        .await?
        .ok_or_else(|| ApiError::Internal(anyhow::anyhow!("execution {execution_id} vanished")))?;
    Ok((StatusCode::ACCEPTED, Json(execution)))
}

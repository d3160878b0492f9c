use axum::extract::State;
use axum::http::StatusCode;
use chrono::NaiveDate;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{Job, JobPath, RangeFields, Unavailable, job_named, start_manual};
use crate::domain::{FencingToken, TaskName};
use crate::http::dates;
use crate::http::error::ApiError;
use crate::http::extract::{Json, Path};
use crate::http::resource::NoSuch;
use crate::jobs::Request;
use crate::state::AppState;

#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BackfillRequest {
    /// First business date (YYYY-MM-DD).
    #[serde(deserialize_with = "dates::date")]
    #[schema(value_type = String, format = Date)]
    pub from: NaiveDate,
    /// Last business date, inclusive; it must have ended.
    #[serde(deserialize_with = "dates::date")]
    #[schema(value_type = String, format = Date)]
    pub to: NaiveDate,
}

/// A backfill that won the lock and is settling its dates.
#[derive(Debug, Serialize, ToSchema)]
pub struct BackfillStarted {
    #[schema(value_type = String)]
    pub task_name: TaskName,
    #[schema(value_type = i64)]
    pub fencing_token: FencingToken,
    /// The dates being settled, oldest first: the dates of the range without SUCCESS, after
    /// every earlier date without SUCCESS from the start date on (dates already settled are
    /// skipped).
    pub dates: Vec<NaiveDate>,
}

/// Settles a range of business dates, oldest first, each with its own execution record.
#[utoipa::path(
    post, path = "/{name}/backfill", tag = "jobs",
    params(JobPath),
    responses(
        (status = 202, description = "Started", body = BackfillStarted),
        NoSuch<Job>,
        (status = 409, description = "The lock is held, the job is running here, or every date is settled"),
        (status = 422, description = "Invalid range, or one that begins before the job's start date"),
        Unavailable,
    ),
)]
pub async fn backfill_job(
    State(state): State<AppState>,
    Path(JobPath { name }): Path<JobPath>,
    Json(body): Json<BackfillRequest>,
) -> Result<(StatusCode, Json<BackfillStarted>), ApiError> {
    let job = job_named(&state, &name)?;
    let request = Request::Range {
        from: body.from,
        to: body.to,
    };
    let fields = RangeFields { from: "from", to: "to" };
    let started = start_manual(&state, job, request, fields).await?;
    let response = BackfillStarted {
        task_name: job.task_name().clone(),
        fencing_token: started.fencing_token,
        dates: started.dates.clone(),
    };
    // The run goes on in the background; `started` is dropped, not awaited.
    drop(started);
    Ok((StatusCode::ACCEPTED, Json(response)))
}

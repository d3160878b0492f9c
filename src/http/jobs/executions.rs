use axum::extract::State;

use super::{Execution, Job, JobPath, job_named};
use crate::http::error::ApiError;
use crate::http::extract::{Json, Path, Query};
use crate::http::pagination::{Page, PageParams};
use crate::http::resource::NoSuch;
use crate::state::AppState;
use crate::store;

/// The job's execution records, newest first: one per business date per run.
#[utoipa::path(
    get, path = "/{name}/executions", tag = "jobs",
    params(JobPath, PageParams),
    responses(
        (status = 200, description = "A page of executions", body = Page<Execution>),
        NoSuch<Job>,
    ),
)]
pub async fn list_executions(
    State(state): State<AppState>,
    Path(JobPath { name }): Path<JobPath>,
    Query(params): Query<PageParams>,
) -> Result<Json<Page<Execution>>, ApiError> {
    let job = job_named(&state, &name)?;
    let page = params.validate()?;
    let rows = store::executions::list(&state.pool, job.task_name(), page).await?;
    Ok(Json(Page::from_rows(rows, page, |r| r.id).map(Execution::from)))
}

use axum::extract::State;

use super::{Attempt, Job, JobPath, job_named};
use crate::http::error::ApiError;
use crate::http::extract::{Json, Path, Query};
use crate::http::pagination::{Page, PageParams};
use crate::http::resource::NoSuch;
use crate::state::AppState;
use crate::store;

/// The attempt timeline, newest first: every fire every replica handled, won or not.
#[utoipa::path(
    get, path = "/{name}/attempts", tag = "jobs",
    params(JobPath, PageParams),
    responses(
        (status = 200, description = "A page of attempts", body = Page<Attempt>),
        NoSuch<Job>,
    ),
)]
pub async fn list_attempts(
    State(state): State<AppState>,
    Path(JobPath { name }): Path<JobPath>,
    Query(params): Query<PageParams>,
) -> Result<Json<Page<Attempt>>, ApiError> {
    let job = job_named(&state, &name)?;
    let page = params.validate()?;
    let rows = store::attempts::list(&state.pool, job.task_name(), page).await?;
    Ok(Json(Page::from_rows(rows, page, |r| r.id).map(Attempt::from)))
}

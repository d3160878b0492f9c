use axum::extract::State;

use super::Job;
use super::get::describe;
use crate::http::error::ApiError;
use crate::http::extract::Json;
use crate::http::pagination::Page;
use crate::state::AppState;

/// The scheduled jobs (a single page).
#[utoipa::path(
    get, path = "", tag = "jobs",
    responses(
        (status = 200, description = "The jobs", body = Page<Job>),
    ),
)]
pub async fn list_jobs(State(state): State<AppState>) -> Result<Json<Page<Job>>, ApiError> {
    let job = describe(&state, &state.job).await?;
    Ok(Json(Page::whole(vec![job])))
}

use axum::extract::State;

use super::Job;
use super::get::describe;
use crate::http::error::{ApiError, Problem};
use crate::http::extract::Json;
use crate::http::pagination::Page;
use crate::startup::AppState;

/// The scheduled jobs (a single page).
#[utoipa::path(
    get, path = "", tag = "jobs",
    responses(
        (status = 200, description = "The jobs", body = Page<Job>),
        (status = 401, description = "Missing or unknown token", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Needs the admin role", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn list_jobs(State(state): State<AppState>) -> Result<Json<Page<Job>>, ApiError> {
    let job = describe(&state, &state.job).await?;
    Ok(Json(Page {
        items: vec![job],
        next_cursor: None,
    }))
}

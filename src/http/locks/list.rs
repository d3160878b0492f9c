use axum::extract::State;

use super::Lock;
use crate::http::error::ApiError;
use crate::http::extract::Json;
use crate::http::pagination::Page;
use crate::state::AppState;

/// Every job lock, held or not (a single page).
#[utoipa::path(
    get, path = "", tag = "locks",
    responses(
        (status = 200, description = "The locks", body = Page<Lock>),
    ),
)]
pub async fn list_locks(State(state): State<AppState>) -> Result<Json<Page<Lock>>, ApiError> {
    let locks = state.job.lock().list().await?;
    Ok(Json(Page::whole(locks)))
}

use axum::extract::State;

use super::Fine;
use crate::http::error::ApiError;
use crate::http::extract::Path;
use crate::http::resource::{Found, found};
use crate::state::AppState;
use crate::store;

/// One fine.
#[utoipa::path(
    get, path = "/{id}", tag = "fines",
    params(("id" = i64, Path, description = "Fine id")),
    responses(Found<Fine>),
)]
pub async fn get_fine(State(state): State<AppState>, Path(id): Path<i64>) -> Result<Found<Fine>, ApiError> {
    found(store::fines::find(&state.pool, id).await?)
}

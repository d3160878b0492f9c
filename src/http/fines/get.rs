use axum::extract::State;

use super::Fine;
use crate::http::error::ApiError;
use crate::http::extract::{Json, Path};
use crate::state::AppState;
use crate::store;

/// One fine.
#[utoipa::path(
    get, path = "/{id}", tag = "fines",
    params(("id" = i64, Path, description = "Fine id")),
    responses(
        (status = 200, description = "The fine", body = Fine),
        (status = 404, description = "No such fine"),
    ),
)]
pub async fn get_fine(State(state): State<AppState>, Path(id): Path<i64>) -> Result<Json<Fine>, ApiError> {
    let row = store::fines::find(&state.pool, id)
        .await?
        .ok_or(ApiError::NotFound("fine"))?;
    Ok(Json(row))
}

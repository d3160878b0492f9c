use axum::extract::State;

use super::Book;
use crate::http::error::ApiError;
use crate::http::extract::{Json, Path};
use crate::state::AppState;
use crate::store;

/// A book copy, and whether it is on loan.
#[utoipa::path(
    get, path = "/{id}", tag = "books",
    params(("id" = i64, Path, description = "Book id")),
    responses(
        (status = 200, description = "The book", body = Book),
        (status = 404, description = "No such book"),
    ),
)]
pub async fn get_book(State(state): State<AppState>, Path(id): Path<i64>) -> Result<Json<Book>, ApiError> {
    let row = store::books::find(&state.pool, id)
        .await?
        .ok_or(ApiError::NotFound("book"))?;
    Ok(Json(row))
}

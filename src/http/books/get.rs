use axum::extract::State;

use super::Book;
use crate::http::error::ApiError;
use crate::http::extract::Path;
use crate::http::resource::{Found, found};
use crate::state::AppState;
use crate::store;

/// A book copy, and whether it is on loan.
#[utoipa::path(
    get, path = "/{id}", tag = "books",
    params(("id" = i64, Path, description = "Book id")),
    responses(Found<Book>),
)]
pub async fn get_book(State(state): State<AppState>, Path(id): Path<i64>) -> Result<Found<Book>, ApiError> {
    found(store::books::find(&state.pool, id).await?)
}

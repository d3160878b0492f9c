use axum::extract::State;

use super::Book;
use crate::http::error::ApiError;
use crate::http::extract::Json;
use crate::http::pagination::{Page, PageParams, PageQuery};
use crate::state::AppState;
use crate::store;

/// Book copies in the order they were added.
#[utoipa::path(
    get, path = "", tag = "books",
    params(PageParams),
    responses(
        (status = 200, description = "A page of books", body = Page<Book>),
    ),
)]
pub async fn list_books(
    State(state): State<AppState>,
    PageQuery(page): PageQuery,
) -> Result<Json<Page<Book>>, ApiError> {
    let rows = store::books::list(&state.pool, page).await?;
    Ok(Json(Page::from_rows(rows, page, |b| b.id).map(Book::from)))
}

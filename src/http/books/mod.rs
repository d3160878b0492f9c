//! `/api/v1/books`: the library's book copies.

mod create;
mod get;
mod isbn;
mod list;

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::state::AppState;
use crate::store::books::BookRow;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create::create_book, list::list_books))
        .routes(routes!(get::get_book))
}

/// One copy of a book. Two copies of the same title are two books with the same ISBN.
#[derive(Debug, Serialize, ToSchema)]
pub struct Book {
    pub id: i64,
    pub title: String,
    /// ISBN-10 or ISBN-13, digits only (an ISBN-10 may end in `X`).
    pub isbn: Option<String>,
    /// Whether the copy is on an open loan.
    pub on_loan: bool,
    pub created_at: DateTime<Utc>,
}

impl From<BookRow> for Book {
    fn from(row: BookRow) -> Self {
        Book {
            id: row.id,
            title: row.title,
            isbn: row.isbn,
            on_loan: row.on_loan,
            created_at: row.created_at,
        }
    }
}

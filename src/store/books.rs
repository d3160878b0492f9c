//! Book copies. Whether a copy is lent is derived from its open loan, never stored twice.

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use super::PageRequest;
use super::rows::{find_by_id, page_in_id_order};

// The row with whether it is lent is the shape the API serves: one type (the doc comment
// below is the OpenAPI description).
/// One copy of a book. Two copies of the same title are two books with the same ISBN.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Book {
    pub id: i64,
    pub title: String,
    /// ISBN-10 or ISBN-13, digits only (an ISBN-10 may end in `X`).
    pub isbn: Option<String>,
    /// Whether the copy is on an open loan.
    pub on_loan: bool,
    pub created_at: DateTime<Utc>,
}

/// Adds a copy. `title` is trimmed and `isbn` normalised (digits only) by the caller.
pub async fn insert(executor: impl sqlx::PgExecutor<'_>, title: &str, isbn: Option<&str>) -> sqlx::Result<Book> {
    sqlx::query_as!(
        Book,
        r#"
        insert into book (title, isbn) values ($1, $2)
        returning id, title, isbn, false as "on_loan!", created_at
        "#,
        title,
        isbn
    )
    .fetch_one(executor)
    .await
}

pub async fn find(executor: impl sqlx::PgExecutor<'_>, id: i64) -> sqlx::Result<Option<Book>> {
    find_by_id!(Book, executor, id)
}

/// A page of books in id order.
pub async fn list(executor: impl sqlx::PgExecutor<'_>, page: PageRequest) -> sqlx::Result<Vec<Book>> {
    page_in_id_order!(Book, executor, page)
}

//! Book copies. Whether a copy is lent is derived from its open loan, never stored twice.

use chrono::{DateTime, Utc};

use super::PageRequest;

#[derive(Debug, Clone)]
pub struct BookRow {
    pub id: i64,
    pub title: String,
    pub isbn: Option<String>,
    /// Whether the copy is on an open loan right now.
    pub on_loan: bool,
    pub created_at: DateTime<Utc>,
}

/// Adds a copy. `title` is trimmed and `isbn` normalised (digits only) by the caller.
pub async fn insert(executor: impl sqlx::PgExecutor<'_>, title: &str, isbn: Option<&str>) -> sqlx::Result<BookRow> {
    sqlx::query_as!(
        BookRow,
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

pub async fn find(executor: impl sqlx::PgExecutor<'_>, id: i64) -> sqlx::Result<Option<BookRow>> {
    sqlx::query_as!(
        BookRow,
        r#"
        select b.id, b.title, b.isbn, b.created_at,
               -- answered by the partial unique index loan_one_open_per_book
               exists (select 1 from loan l where l.book_id = b.id and l.returned_at is null) as "on_loan!"
        from book b
        where b.id = $1
        "#,
        id
    )
    .fetch_optional(executor)
    .await
}

/// A page of books in id order.
pub async fn list(executor: impl sqlx::PgExecutor<'_>, page: PageRequest) -> sqlx::Result<Vec<BookRow>> {
    sqlx::query_as!(
        BookRow,
        r#"
        select b.id, b.title, b.isbn, b.created_at,
               exists (select 1 from loan l where l.book_id = b.id and l.returned_at is null) as "on_loan!"
        from book b
        where b.id > $1
        order by b.id
        limit $2
        "#,
        page.after,
        page.fetch()
    )
    .fetch_all(executor)
    .await
}

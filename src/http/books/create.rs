use axum::extract::State;
use serde::Deserialize;
use utoipa::ToSchema;

use super::Book;
use super::isbn::normalize_isbn;
use crate::http::error::{ApiError, FieldError};
use crate::http::extract::Json;
use crate::http::response::Created;
use crate::http::text_field::{Controls, text_field};
use crate::state::AppState;
use crate::store;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewBook {
    /// 1 to 500 characters (surrounding spaces are trimmed), no control characters.
    #[schema(min_length = 1, max_length = 500)]
    pub title: String,
    /// ISBN-10 or ISBN-13 with a valid check digit; hyphens and spaces are ignored.
    #[schema(example = "978-0-306-40615-7")]
    pub isbn: Option<String>,
}

impl NewBook {
    /// The title and the normalised ISBN, or every field's error.
    fn validate(&self) -> Result<(String, Option<String>), ApiError> {
        let title = text_field("title", &self.title, 500, Controls::None);
        let isbn = self.isbn.as_deref().map(|raw| {
            normalize_isbn(raw).ok_or_else(|| {
                FieldError::new(
                    "isbn",
                    "must be an ISBN-10 or ISBN-13 with a valid check digit, such as 978-0-306-40615-7",
                )
            })
        });
        match (title, isbn.transpose()) {
            (Ok(title), Ok(isbn)) => Ok((title.to_owned(), isbn)),
            (title, isbn) => Err(ApiError::Invalid(title.err().into_iter().chain(isbn.err()).collect())),
        }
    }
}

/// Adds a book copy to the catalogue.
#[utoipa::path(
    post, path = "", tag = "books",
    responses(
        (status = 201, description = "Created", body = Book,
            headers(("Location" = String, description = "The book's URL"))),
        (status = 422, description = "Invalid fields"),
    ),
)]
pub async fn create_book(State(state): State<AppState>, Json(body): Json<NewBook>) -> Result<Created<Book>, ApiError> {
    let (title, isbn) = body.validate()?;
    let row = store::books::insert(&state.pool, &title, isbn.as_deref()).await?;
    tracing::info!(book.id = row.id, "book added");
    Ok(Created::new(format!("/api/v1/books/{}", row.id), row))
}

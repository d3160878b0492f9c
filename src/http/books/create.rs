use axum::extract::State;
use serde::Deserialize;
use utoipa::ToSchema;

use super::Book;
use super::isbn::normalize_isbn;
use crate::domain::text;
use crate::http::error::{ApiError, FieldError, Problem};
use crate::http::extract::Json;
use crate::http::response::Created;
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
    fn validate(&self) -> Result<(String, Option<String>), ApiError> {
        let mut errors = Vec::new();
        let title = self.title.trim();
        if title.is_empty() || title.chars().count() > 500 {
            errors.push(FieldError::new("title", "must be 1 to 500 characters"));
        } else if title.chars().any(char::is_control) {
            // PostgreSQL refuses NUL in text, and no title needs a control character.
            errors.push(FieldError::new("title", "must not contain control characters"));
        } else if !text::has_visible_char(title) {
            errors.push(FieldError::new("title", "must contain a visible character"));
        }
        let isbn = match self.isbn.as_deref() {
            None => None,
            Some(raw) => {
                let isbn = normalize_isbn(raw);
                if isbn.is_none() {
                    errors.push(FieldError::new(
                        "isbn",
                        "must be an ISBN-10 or ISBN-13 with a valid check digit, such as 978-0-306-40615-7",
                    ));
                }
                isbn
            }
        };
        if errors.is_empty() {
            Ok((title.to_owned(), isbn))
        } else {
            Err(ApiError::Invalid(errors))
        }
    }
}

/// Adds a book copy to the catalogue.
#[utoipa::path(
    post, path = "", tag = "books",
    request_body = NewBook,
    responses(
        (status = 201, description = "Created", body = Book,
            headers(("Location" = String, description = "The book's URL"))),
        (status = 400, description = "Malformed JSON", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid fields", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn create_book(State(state): State<AppState>, Json(body): Json<NewBook>) -> Result<Created<Book>, ApiError> {
    let (title, isbn) = body.validate()?;
    let row = store::books::insert(&state.pool, &title, isbn.as_deref()).await?;
    tracing::info!(book.id = row.id, "book added");
    Ok(Created::new(format!("/api/v1/books/{}", row.id), row))
}

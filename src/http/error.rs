//! The one error type of the HTTP layer, answered as `application/problem+json` (RFC 9457).
//!
//! Handlers return `Result<_, ApiError>` and use `?` on store calls. Client mistakes carry a
//! message written for the client; internal errors are logged once, here, with their cause, and
//! the client only ever sees "internal error" and the request id to quote.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use crate::store::failure::{Conflict, DbFailure};

/// `Retry-After` of every 503: a failover leaves about ten seconds without a primary, and a
/// client that retries every two seconds is back within one of its end.
pub const RETRY_AFTER_SECONDS: u16 = 2;

/// A field that failed validation, named as in the request body or query.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq, Eq)]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

impl FieldError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        FieldError {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// One field's error is a 422 naming it.
impl From<FieldError> for ApiError {
    fn from(error: FieldError) -> Self {
        ApiError::Invalid(vec![error])
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The request could not be read: malformed JSON, a bad path or query parameter.
    #[error("{0}")]
    BadRequest(String),
    /// Well-formed, but some fields are not acceptable.
    #[error("invalid request: {}", .0.iter().map(|e| format!("{}: {}", e.field, e.message)).collect::<Vec<_>>().join("; "))]
    Invalid(Vec<FieldError>),
    #[error("missing or unknown bearer token")]
    Unauthorized,
    #[error("this needs the {0} role")]
    Forbidden(&'static str),
    #[error("{0} not found")]
    NotFound(&'static str),
    /// The request conflicts with the current state (book already lent, fine already void...).
    #[error("{message}")]
    Conflict { code: &'static str, message: String },
    #[error("request body is larger than the limit of 64 KiB")]
    PayloadTooLarge,
    #[error("unsupported media type: send application/json")]
    UnsupportedMediaType,
    /// A dependency is down or the service is stopping; the client may retry later.
    #[error("{0}")]
    Unavailable(String),
    #[error(transparent)]
    Database(#[from] sqlx::Error),
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

/// The body of every error response.
#[derive(Debug, Serialize, ToSchema)]
pub struct Problem {
    /// Always `about:blank`: `code` tells the kind of problem.
    #[serde(rename = "type")]
    pub type_: &'static str,
    pub title: String,
    pub status: u16,
    pub detail: String,
    /// A stable machine-readable name for the problem, e.g. `book_already_lent`.
    pub code: String,
    /// The fields that failed validation (422 only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<FieldError>,
}

impl ApiError {
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        ApiError::Invalid(vec![FieldError::new(field, message)])
    }

    pub fn conflict(code: &'static str, message: impl Into<String>) -> Self {
        ApiError::Conflict {
            code,
            message: message.into(),
        }
    }

    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Invalid(_) => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::Conflict { .. } => StatusCode::CONFLICT,
            ApiError::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Database(_) | ApiError::Internal(_) => match self.database_failure() {
                Some((_, DbFailure::Unavailable | DbFailure::Retryable)) => StatusCode::SERVICE_UNAVAILABLE,
                Some((_, DbFailure::Check)) => StatusCode::UNPROCESSABLE_ENTITY,
                Some((_, DbFailure::Other)) | None => StatusCode::INTERNAL_SERVER_ERROR,
            },
        }
    }

    /// The database error behind this one and its class: a store call's, or one a feature
    /// wrapped in its own error on the way (the audit's alert write, say), so that an
    /// unavailable database is a 503 however it travelled.
    fn database_failure(&self) -> Option<(&sqlx::Error, DbFailure)> {
        let error = match self {
            ApiError::Database(error) => Some(error),
            ApiError::Internal(error) => error.chain().find_map(|cause| cause.downcast_ref::<sqlx::Error>()),
            _ => None,
        }?;
        Some((error, DbFailure::of(error)))
    }

    fn code(&self) -> &'static str {
        match self {
            ApiError::BadRequest(_) => "malformed_request",
            ApiError::Invalid(_) => "invalid_fields",
            ApiError::Unauthorized => "unauthorized",
            ApiError::Forbidden(_) => "forbidden",
            ApiError::NotFound(_) => "not_found",
            ApiError::Conflict { code, .. } => code,
            ApiError::PayloadTooLarge => "payload_too_large",
            ApiError::UnsupportedMediaType => "unsupported_media_type",
            ApiError::Unavailable(_) => "unavailable",
            ApiError::Database(_) | ApiError::Internal(_) => match self.status() {
                StatusCode::SERVICE_UNAVAILABLE => "unavailable",
                StatusCode::UNPROCESSABLE_ENTITY => "invalid_fields",
                _ => "internal_error",
            },
        }
    }

    pub fn problem(&self) -> Problem {
        let status = self.status();
        let failure = self.database_failure();
        let errors = match (self, failure) {
            (ApiError::Invalid(errors), _) => errors.clone(),
            (_, Some((error, DbFailure::Check))) => vec![checked_field(error)],
            _ => Vec::new(),
        };
        let detail = match (self, failure) {
            // Never echo a database or internal error: it may name tables, hosts or values.
            (_, Some((_, DbFailure::Unavailable))) => "the database is unavailable; retry shortly".to_owned(),
            (_, Some((_, DbFailure::Retryable))) => {
                "the database kept refusing the change for conflicting ones; retry shortly".to_owned()
            }
            (_, Some((_, DbFailure::Check))) => ApiError::Invalid(errors.clone()).to_string(),
            (ApiError::Database(_) | ApiError::Internal(_), _) => internal_detail(),
            (other, _) => other.to_string(),
        };
        Problem {
            type_: "about:blank",
            title: status.canonical_reason().unwrap_or("Error").to_owned(),
            status: status.as_u16(),
            detail,
            code: self.code().to_owned(),
            errors,
        }
    }
}

/// A request's transaction that lost a race runs again ([`crate::store::failure::Retries`]).
impl Conflict for ApiError {
    fn is_conflict(&self) -> bool {
        matches!(self, ApiError::Database(error) if error.is_conflict())
    }
}

fn internal_detail() -> String {
    "internal error; quote the x-request-id header when reporting it".to_owned()
}

/// The request fields the database's check constraints guard, by constraint name: the handlers
/// validate each first, so the database refuses one only when the two disagree (a database whose
/// encoding counts bytes, say, which `serve` now refuses at start).
const CHECKED_FIELDS: [(&str, &str); 7] = [
    ("book_title_not_blank", "title"),
    ("book_isbn_shape", "isbn"),
    ("member_name_not_blank", "name"),
    ("member_email_shape", "email"),
    ("loan_due_not_before_borrowed", "due_on"),
    ("loan_returned_not_before_borrowed", "returned_at"),
    ("ledger_entry_sign", "amount_cents"),
];

/// The field a check violation names, or the body as a whole for a constraint no field maps to.
fn checked_field(error: &sqlx::Error) -> FieldError {
    let constraint = match error {
        sqlx::Error::Database(db) => db.constraint().unwrap_or_default(),
        _ => "",
    };
    match CHECKED_FIELDS.iter().find(|(name, _)| *name == constraint) {
        Some((_, field)) => FieldError::new(*field, format!("is not accepted by the database ({constraint})")),
        None => FieldError::new("body", "a value is not accepted by the database"),
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        // The one place server errors are logged; the request span adds the request id. An
        // unavailable dependency is expected during a failover, and is not a bug.
        if status == StatusCode::SERVICE_UNAVAILABLE {
            tracing::warn!(error = ?self, "request refused: unavailable");
        } else if status.is_server_error() {
            tracing::error!(error = ?self, "request failed");
        }
        problem_response(status, self.problem())
    }
}

/// Serialises a problem with the `application/problem+json` content type.
pub fn problem_response(status: StatusCode, problem: Problem) -> Response {
    let mut response = (status, Json(problem)).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/problem+json"),
    );
    if status == StatusCode::UNAUTHORIZED {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    if status == StatusCode::SERVICE_UNAVAILABLE {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECONDS));
    }
    response
}

/// Maps a violated database constraint to a client error, by constraint name, the way
/// realworld-axum-sqlx does: the database is the final judge of uniqueness and state, and the
/// handler says what a violation means for this request.
pub trait ResultExt<T> {
    fn on_constraint(self, name: &str, map: impl FnOnce() -> ApiError) -> Result<T, ApiError>;
}

impl<T, E: Into<ApiError>> ResultExt<T> for Result<T, E> {
    fn on_constraint(self, name: &str, map: impl FnOnce() -> ApiError) -> Result<T, ApiError> {
        self.map_err(|e| match e.into() {
            ApiError::Database(sqlx::Error::Database(db)) if db.constraint() == Some(name) => map(),
            other => other,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_database_error_wrapped_on_its_way_is_answered_by_its_class() {
        let wrapped = ApiError::Internal(anyhow::Error::from(sqlx::Error::PoolTimedOut).context("raising the alert"));
        let problem = wrapped.problem();
        assert_eq!((problem.status, problem.code.as_str()), (503, "unavailable"));
        let bug = ApiError::Internal(anyhow::anyhow!("a stored value this code does not know"));
        assert_eq!(
            (bug.problem().status, bug.problem().code),
            (500, "internal_error".to_owned())
        );
    }
}

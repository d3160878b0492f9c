//! Axum's extractors, with their rejections turned into problem+json answers.
//!
//! Axum answers a bad body with plain text; these wrappers keep every error in one shape and
//! decide the status: unreadable JSON (or JSON naming a key twice) is 400, JSON of the wrong
//! shape is 422 naming the field, an oversized body 413, a query string with a parameter the
//! route does not know 400 naming it.

use axum::extract::rejection::{JsonRejection, PathRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;

use super::error::{ApiError, FieldError};
use super::strict_json::{DUPLICATE_KEY, UniqueKeys};

/// A JSON request body (or response), whose rejection is an [`ApiError`].
///
/// The body must be a JSON *object*: serde's derived structs would also accept an array of the
/// fields in order (`["Ada", "ada@example.org"]`), which no client means to send.
///
/// A handler's `Json<T>` argument is its documented request body (utoipa's `axum_extras` read it
/// by this name), so its `#[utoipa::path]` does not repeat it as `request_body`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Json<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for Json<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        let axum::Json(UniqueKeys(value)) = axum::Json::<UniqueKeys>::from_request(request, state).await?;
        if !value.is_object() {
            return Err(ApiError::invalid("body", "must be a JSON object"));
        }
        serde_path_to_error::deserialize(value).map(Json).map_err(|error| {
            let path = error.path().to_string();
            let message = error.into_inner().to_string();
            ApiError::Invalid(vec![field_error(&format!("{path}: {message}"))])
        })
    }
}

impl<T: serde::Serialize> IntoResponse for Json<T> {
    fn into_response(self) -> Response {
        axum::Json(self.0).into_response()
    }
}

/// `axum::extract::Path` whose rejection is an [`ApiError`].
#[derive(Debug, FromRequestParts)]
#[from_request(via(axum::extract::Path), rejection(ApiError))]
pub struct Path<T>(pub T);

/// The query string, read into `T`, whose rejection is an [`ApiError`].
///
/// A parameter `T` does not know is a 400 that names it: silently ignoring `member_id[]=1` would
/// answer the unfiltered list to a client who believes it filtered. So a handler takes all of its
/// parameters in one `Query`.
#[derive(Debug)]
pub struct Query<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for Query<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let query = parts.uri.query().unwrap_or_default();
        let pairs = serde_urlencoded::Deserializer::new(form_urlencoded::parse(query.as_bytes()));
        let mut unknown = Vec::new();
        let mut note_unknown = |path: serde_ignored::Path<'_>| unknown.push(path.to_string());
        let value = serde_path_to_error::deserialize(serde_ignored::Deserializer::new(pairs, &mut note_unknown))
            .map_err(|error| {
                let path = error.path().to_string();
                let message = error.into_inner().to_string();
                let text = if path == "." {
                    message
                } else {
                    format!("{path}: {message}")
                };
                ApiError::BadRequest(format!("invalid query string: {text}"))
            })?;
        if !unknown.is_empty() {
            return Err(ApiError::BadRequest(format!(
                "unknown query parameter(s): {}",
                unknown.join(", ")
            )));
        }
        Ok(Query(value))
    }
}

impl From<JsonRejection> for ApiError {
    fn from(rejection: JsonRejection) -> Self {
        match rejection {
            JsonRejection::JsonDataError(e) if e.body_text().contains(DUPLICATE_KEY) => ApiError::BadRequest(format!(
                "the body is not valid JSON: {}",
                strip_axum_prefix(&e.body_text())
            )),
            JsonRejection::JsonDataError(e) => ApiError::Invalid(vec![field_error(&e.body_text())]),
            JsonRejection::JsonSyntaxError(_) => ApiError::BadRequest("the body is not valid JSON".to_owned()),
            JsonRejection::MissingJsonContentType(_) => ApiError::UnsupportedMediaType,
            other if other.status() == StatusCode::PAYLOAD_TOO_LARGE => ApiError::PayloadTooLarge,
            other => ApiError::BadRequest(other.body_text()),
        }
    }
}

impl From<PathRejection> for ApiError {
    fn from(rejection: PathRejection) -> Self {
        ApiError::BadRequest(format!(
            "invalid path parameter: {}",
            strip_axum_prefix(&rejection.body_text())
        ))
    }
}

/// Turns serde's message ("Failed to deserialize ...: member_id: invalid type: ...") into the
/// field it names and what was wrong with it.
fn field_error(text: &str) -> FieldError {
    let text = strip_axum_prefix(text);
    if let Some(rest) = text.split("missing field `").nth(1) {
        let field = rest.split('`').next().unwrap_or_default();
        return FieldError::new(field, "is required");
    }
    match text.split_once(": ") {
        Some((path, message)) if !path.contains(' ') && path != "." => FieldError::new(path, message),
        _ => FieldError::new("body", text),
    }
}

fn strip_axum_prefix(text: &str) -> &str {
    text.split_once("target type: ")
        .map(|(_, rest)| rest)
        .or_else(|| text.split_once("query string: ").map(|(_, rest)| rest))
        .unwrap_or(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_field_in_a_type_error() {
        let e = field_error(
            "Failed to deserialize the JSON body into the target type: member_id: invalid type: string \"x\", expected i64 at line 1 column 17",
        );
        assert_eq!(e.field, "member_id");
        assert!(e.message.starts_with("invalid type"));
    }

    #[test]
    fn names_a_missing_field() {
        let e = field_error(
            "Failed to deserialize the JSON body into the target type: missing field `due_on` at line 1 column 20",
        );
        assert_eq!(e, FieldError::new("due_on", "is required"));
    }
}

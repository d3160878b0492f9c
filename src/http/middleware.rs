//! Cross-cutting request handling: request spans, panics, and problem bodies for the errors that
//! axum and tower answer themselves (404 of unknown paths, 405, 408 timeouts).

use std::any::Any;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tracing::Span;

use super::error::{ApiError, Problem, problem_response};

pub async fn not_found() -> ApiError {
    ApiError::NotFound("route")
}

/// Gives a problem+json body to error responses that were produced without one.
pub async fn problem_for_bare_errors(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) || response.headers().contains_key(header::CONTENT_TYPE)
    {
        return response;
    }
    let (mut parts, _) = response.into_parts();
    let detail = match status {
        StatusCode::METHOD_NOT_ALLOWED => "this method is not allowed on this path".to_owned(),
        StatusCode::REQUEST_TIMEOUT => "the request took too long and was abandoned".to_owned(),
        StatusCode::PAYLOAD_TOO_LARGE => "request body is larger than the limit of 64 KiB".to_owned(),
        other => other.canonical_reason().unwrap_or("error").to_lowercase(),
    };
    let code = status
        .canonical_reason()
        .unwrap_or("error")
        .to_lowercase()
        .replace([' ', '-'], "_");
    let problem = Problem {
        type_: "about:blank",
        title: status.canonical_reason().unwrap_or("Error").to_owned(),
        status: status.as_u16(),
        detail,
        code,
        errors: Vec::new(),
    };
    let body = problem_response(status, problem);
    let (problem_parts, problem_body) = body.into_parts();
    parts.headers.extend(problem_parts.headers);
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, problem_body)
}

/// A panic in a handler becomes a logged 500, never a dropped connection or a stack trace.
pub fn panic_to_problem(panic: Box<dyn Any + Send + 'static>) -> Response<Body> {
    let message = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("unknown panic");
    ApiError::Internal(anyhow::anyhow!("handler panicked: {message}")).into_response()
}

/// One span per request, carrying the request id so every log line of the request has it.
pub fn request_span(request: &Request) -> Span {
    let request_id = request
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    tracing::info_span!(
        "http.request",
        http.method = %request.method(),
        http.path = %request.uri().path(),
        request.id = %request_id,
    )
}

//! Cross-cutting request handling: request spans, request ids, panics, limits on the request
//! head, and problem bodies for the errors that axum and tower answer themselves (404 of unknown
//! paths, 405, 408 timeouts, 414 and 431 of the head limits).
//!
//! hyper answers some malformed requests before any of this runs, with a bare status and no body:
//! a request line or header it cannot parse (400), a head larger than its buffer (431). The head
//! limits here are far below hyper's, so every ordinary oversized request gets a problem body.

use std::any::Any;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tracing::Span;
use uuid::Uuid;

use super::error::{ApiError, Problem, problem_response};
use super::metrics;

pub async fn not_found() -> ApiError {
    ApiError::NotFound("route")
}

/// The head limits and the problem bodies, in one layer: each `from_fn` layer boxes and clones
/// the whole stack inside it on every request (load/results/reads.md), and these two were
/// adjacent. A request whose head is too large is answered a bare 414 or 431
/// ([`oversized_head`]); any bare error, that one or one from the layers inside (405, 408, 413),
/// then gets its problem+json body ([`problem_for_bare_error`]).
pub async fn head_limits_and_problems(request: Request, next: Next) -> Response {
    let response = match oversized_head(&request) {
        Some(status) => status.into_response(),
        None => next.run(request).await,
    };
    problem_for_bare_error(response)
}

/// Gives a problem+json body to an error response that was produced without one.
fn problem_for_bare_error(response: Response) -> Response {
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
        StatusCode::URI_TOO_LONG => format!("the request target is longer than {MAX_URI_BYTES} bytes"),
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE => {
            format!("send at most {MAX_HEADERS} headers of at most {MAX_HEADER_BYTES} bytes in all")
        }
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

/// The longest request target (path and query) served; longer is a 414.
pub const MAX_URI_BYTES: usize = 8 * 1024;
/// The most headers, and the most bytes of header names and values, a request may carry; more
/// is a 431. (hyper's own limits, 100 headers and a 400 KiB buffer, stay behind these.)
pub const MAX_HEADERS: usize = 64;
pub const MAX_HEADER_BYTES: usize = 32 * 1024;

/// Refuses a request whose head is larger than any client of this API sends: 414 for a long
/// target, 431 for too many or too large headers; `None` for any other request.
fn oversized_head(request: &Request) -> Option<StatusCode> {
    let target = request.uri().path_and_query().map_or(0, |p| p.as_str().len());
    if target > MAX_URI_BYTES {
        return Some(StatusCode::URI_TOO_LONG);
    }
    let headers = request.headers();
    let bytes: usize = headers
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len())
        .sum();
    if headers.len() > MAX_HEADERS || bytes > MAX_HEADER_BYTES {
        return Some(StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE);
    }
    None
}

/// The longest request id a client may choose.
pub const MAX_REQUEST_ID_BYTES: usize = 64;

/// The request id's header: a client's own, or one generated here.
const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// On every response, a panic's included. Responses name members and their e-mails: no cache may
/// keep them, no browser may guess another type, no page may frame them.
const EVERY_RESPONSE: [(HeaderName, HeaderValue); 3] = [
    (header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")),
    (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
    (header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY")),
];

/// The first layer a request meets and the last its response leaves, all in one `from_fn`
/// layer: every layer is polled, and each `from_fn` layer boxes a clone of the stack inside it,
/// on every request (load/results/reads.md), and these jobs need nothing from the layers between.
/// - The request id: a client's valid `x-request-id` ([`drop_invalid_request_id`]) or a fresh
///   UUID, set before anything logs (the request span inside reads it) and echoed on the
///   response unless a layer inside answered one.
/// - The request's metrics ([`metrics::record`]), outermost so that they count what every inner
///   layer answers itself.
/// - The headers of [`EVERY_RESPONSE`], where a handler did not set its own.
pub async fn request_id_metrics_and_headers(mut request: Request, next: Next) -> Response {
    let request_id = request_id(request.headers_mut());
    let mut response = metrics::record(request, next).await;
    let headers = response.headers_mut();
    headers.entry(REQUEST_ID).or_insert(request_id);
    for (name, value) in EVERY_RESPONSE {
        headers.entry(name).or_insert(value);
    }
    response
}

/// The request's id, after setting a fresh one where the client sent none or an invalid one.
fn request_id(headers: &mut HeaderMap) -> HeaderValue {
    drop_invalid_request_id(headers);
    if let Some(id) = headers.get(REQUEST_ID) {
        return id.clone();
    }
    let mut buffer = Uuid::encode_buffer();
    let fresh = Uuid::new_v4().hyphenated().encode_lower(&mut buffer);
    let id = HeaderValue::from_str(fresh).expect("a UUID is a valid header value");
    headers.insert(REQUEST_ID, id.clone());
    id
}

/// Keeps the client's `x-request-id` only when it is one header of 1 to 64 characters from
/// `A-Z a-z 0-9 . _ : -`; otherwise [`request_id`] generates a fresh one. The id is echoed and put
/// on every log line of the request: a client must not be able to make those lines arbitrarily
/// long or put anything else in them.
fn drop_invalid_request_id(headers: &mut HeaderMap) {
    let mut values = headers.get_all(REQUEST_ID).iter();
    let valid = match (values.next(), values.next()) {
        (None, _) => true,
        (Some(value), None) => is_valid_request_id(value),
        (Some(_), Some(_)) => false,
    };
    if !valid {
        headers.remove("x-request-id");
    }
}

fn is_valid_request_id(value: &HeaderValue) -> bool {
    let bytes = value.as_bytes();
    (1..=MAX_REQUEST_ID_BYTES).contains(&bytes.len())
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'))
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

/// One span per request, carrying the request id so every log line of the request has it. The
/// fields are recorded as strings, not through `Display`: the log layer formats them when the span
/// opens, on every request.
pub fn request_span(request: &Request) -> Span {
    let request_id = request
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    tracing::info_span!(
        "http.request",
        http.method = request.method().as_str(),
        http.path = request.uri().path(),
        request.id = request_id,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_are_short_and_plain() {
        for good in ["a", "req-1", "4f1c2a3e-9b7d-4c1a-8e2f-0123456789ab", "trace:span.1_2"] {
            assert!(is_valid_request_id(&HeaderValue::from_static(good)), "{good}");
        }
        let long = "x".repeat(MAX_REQUEST_ID_BYTES + 1);
        for bad in ["", "a b", "a\"b", "<script>", "id\u{7f}", long.as_str()] {
            let value = HeaderValue::from_str(bad);
            assert!(value.is_err() || !is_valid_request_id(&value.unwrap()), "{bad:?}");
        }
    }
}

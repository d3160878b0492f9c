//! Request count and latency by route template, method and status.
//!
//! Installed as the outermost layer, so it also counts what the inner layers answer themselves:
//! 408 timeouts, 413 bodies, 500 panics, 404 unknown paths. axum applies router layers after
//! routing, so the matched route template is already known here.

use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;

use crate::telemetry::metrics;

/// Records `finesettle.http.server.requests` and `finesettle.http.server.duration` for one
/// request. The route is the template (`/api/v1/members/{id}`), never the raw path, so ids and
/// probes of random paths cannot create new series.
pub async fn record(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let route = request.extensions().get::<MatchedPath>().cloned();
    let method = method_label(request.method());
    let response = next.run(request).await;
    metrics::http_request(
        route.as_ref().map(MatchedPath::as_str),
        method,
        response.status().as_u16(),
        started.elapsed(),
    );
    response
}

/// The method as OpenTelemetry's HTTP conventions name it: the standard methods as they are,
/// anything else `_OTHER`, since clients may send any token as a method.
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::CONNECT => "CONNECT",
        Method::OPTIONS => "OPTIONS",
        Method::TRACE => "TRACE",
        Method::PATCH => "PATCH",
        _ => "_OTHER",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_methods_are_folded_into_other() {
        assert_eq!(method_label(&Method::DELETE), "DELETE");
        assert_eq!(method_label(&Method::from_bytes(b"PURGE").unwrap()), "_OTHER");
    }
}

//! The HTTP interface: the router, its middleware, and one folder per resource.

pub mod auth;
pub mod dates;
pub mod error;
pub mod extract;
mod health;
pub mod idempotency;
mod metrics;
mod middleware;
pub mod openapi;
pub mod pagination;
pub mod read;
pub mod resource;
pub mod response;
pub mod server;
mod strict_json;
pub mod text_field;

mod alerts;
mod books;
mod dashboard;
mod fines;
mod jobs;
mod loans;
pub mod locks;
mod members;

use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;
use utoipa_axum::router::OpenApiRouter;

use crate::state::AppState;

/// Request bodies above this are answered 413 (CONTRACT §5).
pub const BODY_LIMIT_BYTES: usize = 64 * 1024;

/// Every documented route, with its OpenAPI description. The API document is built from this,
/// so it cannot drift from the routes.
pub fn api_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(openapi::base_document())
        .nest("/api/v1/members", members::routes())
        .nest("/api/v1/books", books::routes())
        .nest("/api/v1/loans", loans::routes())
        .nest("/api/v1/fines", fines::routes())
        .nest("/api/v1/jobs", jobs::routes())
        .nest("/api/v1/locks", locks::routes())
        .nest("/api/v1/alerts", alerts::routes())
}

/// The whole application: API (behind auth), health, docs, and the middleware stack.
pub fn router(state: AppState, request_timeout: Duration) -> Router {
    let (api, document) = openapi::split(api_routes());
    let api = api.route_layer(axum::middleware::from_fn_with_state(state.clone(), auth::authorize));

    Router::new()
        .merge(api)
        .merge(health::routes())
        .merge(dashboard::routes())
        .merge(openapi::docs_routes(document))
        .fallback(middleware::not_found)
        .with_state(state)
        .layer(DefaultBodyLimit::max(BODY_LIMIT_BYTES))
        // Each layer wraps the ones above it: the last is the first to see a request. The
        // timeout and the head limits answer bare statuses, which the problem layer, outside
        // them, gives a problem+json body.
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            request_timeout,
        ))
        .layer(axum::middleware::from_fn(middleware::head_limits_and_problems))
        .layer(CatchPanicLayer::custom(middleware::panic_to_problem))
        .layer(TraceLayer::new_for_http().make_span_with(middleware::request_span))
        // The request id (set before anything logs, so every log line of the request has it),
        // the metrics, outermost, and the headers of every response.
        .layer(axum::middleware::from_fn(middleware::request_id_metrics_and_headers))
}

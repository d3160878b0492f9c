//! The operator dashboard at `/`: the job, its lock, recent executions per replica, attempts,
//! alerts, the reminder queue and fine totals, on one server-rendered page.
//!
//! No script and nothing fetched from elsewhere: the page reads the same with JavaScript off,
//! works offline, and reloads itself every few seconds (`<meta http-equiv="refresh">`).
//!
//! It is served without a token, like `/healthz`, so that it can hang on a wall screen. It
//! therefore shows operational data only — schedules, replicas, locks, executions, alerts,
//! aggregates — and nothing about any member. Two guards keep that open door harmless: at most
//! [`CONCURRENT_RENDERS`] renders run at once in a process (a flood of reloads waits rather than
//! taking the database pool from the API), and a Content-Security-Policy that allows no script.
//!
//! - [`data`] gathers everything into a `DashboardData`; the other modules only render it, with
//!   maud templates: every value they insert is escaped unless a template says otherwise, so an
//!   error or alert detail from the database cannot become markup. Only the page's own constants
//!   (its doctype and styles) are inserted as they are.

mod activity;
mod data;
mod job;
mod page;
mod status;
mod text;
mod timeline;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tokio::sync::Semaphore;

use crate::state::AppState;

/// Dashboard renders allowed at once in one process.
pub const CONCURRENT_RENDERS: usize = 2;

static RENDERS: Semaphore = Semaphore::const_new(CONCURRENT_RENDERS);

/// Inline styles only; no script, no image, no frame, no form target.
const CONTENT_SECURITY_POLICY: &str =
    "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

pub fn routes() -> Router<AppState> {
    Router::new().route("/", get(dashboard))
}

async fn dashboard(State(state): State<AppState>) -> Response {
    let (status, body) = {
        // Never closed, so acquiring cannot fail; the request timeout bounds the wait.
        let _permit = RENDERS.acquire().await;
        match data::gather(&state).await {
            Ok(data) => (StatusCode::OK, page::render(&data)),
            Err(error) => {
                tracing::error!(%error, "dashboard: the database did not answer");
                (StatusCode::SERVICE_UNAVAILABLE, page::unavailable())
            }
        }
    };
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
}

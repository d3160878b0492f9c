//! What every HTTP handler can reach, in a module of its own.
//!
//! It sits below both `startup` (which builds it) and `http` (which reads it), so neither imports
//! the other's internals: `startup` wires the router, and handlers see only this value. Features
//! outside `http` (reminders, alerts, the job) take the parts they need, never the whole state.

use std::sync::Arc;

use sqlx::PgPool;

use crate::config::{ApiTokens, Settings};
use crate::jobs::SettleJob;

/// Cheap to clone: every field is a pool or an `Arc`.
#[derive(Clone)]
pub struct AppState {
    pub pool: PgPool,
    pub settings: Arc<Settings>,
    pub tokens: Arc<ApiTokens>,
    pub redis: Option<deadpool_redis::Pool>,
    /// The settlement job, for manual runs and the jobs view.
    pub job: SettleJob,
}

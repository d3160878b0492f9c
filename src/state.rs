//! What every HTTP handler can reach, in a module of its own.
//!
//! It sits below both `startup` (which builds it) and `http` (which reads it), so neither imports
//! the other's internals: `startup` wires the router, and handlers see only this value. Features
//! outside `http` (reminders, alerts, the job) take the parts they need, never the whole state.

use std::sync::Arc;

use sqlx::PgPool;

use crate::config::{ApiTokens, Settings};
use crate::failover::FailoverWatch;
use crate::jobs::SettleJob;
use crate::store::reads::ReadConnections;

/// Cheap to clone: one `Arc`. Every request clones it more than once (the auth layer, each
/// `State` extractor), and a clone per field showed in the read path's profile
/// (load/results/reads.md).
#[derive(Clone)]
pub struct AppState(Arc<AppStateParts>);

impl AppState {
    pub fn new(parts: AppStateParts) -> Self {
        AppState(Arc::new(parts))
    }
}

impl std::ops::Deref for AppState {
    type Target = AppStateParts;

    fn deref(&self) -> &AppStateParts {
        &self.0
    }
}

/// What [`AppState`] holds.
pub struct AppStateParts {
    pub pool: PgPool,
    /// Connections of `pool` kept for the hottest reads (see [`ReadConnections`]).
    pub reads: ReadConnections,
    pub settings: Arc<Settings>,
    pub tokens: Arc<ApiTokens>,
    pub redis: Option<deadpool_redis::Pool>,
    /// The settlement job, for manual runs and the jobs view.
    pub job: SettleJob,
    /// What this replica last saw of the database, to notice a failover (`crate::failover`).
    pub failover: FailoverWatch,
}

//! `/api/v1/locks`: who holds which job lock (admin).

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::lock::LockView;
use crate::state::AppState;

mod list;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list::list_locks))
}

/// A job lock row. Rows stay after release; `held` says whether `locked_until` is still ahead.
#[derive(Debug, Serialize, ToSchema)]
pub struct Lock {
    pub task_name: String,
    /// The holder's instance id.
    pub locked_by: String,
    pub locked_at: DateTime<Utc>,
    pub locked_until: DateTime<Utc>,
    /// Incremented by every acquisition; writes with an older token are refused.
    pub fencing_token: i64,
    pub held: bool,
}

impl From<LockView> for Lock {
    fn from(view: LockView) -> Self {
        Lock {
            task_name: view.task_name,
            locked_by: view.locked_by,
            locked_at: view.locked_at,
            locked_until: view.locked_until,
            fencing_token: view.fencing_token,
            held: view.held,
        }
    }
}

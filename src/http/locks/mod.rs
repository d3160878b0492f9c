//! `/api/v1/locks`: who holds which job lock (admin).

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::http::error::ApiError;
pub use crate::lock::Lock;
use crate::lock::LockError;
use crate::state::AppState;

mod list;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list::list_locks))
}

/// A lock store that cannot answer now is unavailable (503), as the database is; a database
/// error is answered by its class (`store::failure`); anything else the store answered is a bug.
impl From<LockError> for ApiError {
    fn from(error: LockError) -> Self {
        match error {
            LockError::Database(error) | LockError::RowBusy { source: error, .. } => ApiError::Database(error),
            LockError::Redis(ref redis)
                if !(redis.is_io_error()
                    || redis.is_connection_refusal()
                    || redis.is_connection_dropped()
                    || redis.is_timeout()) =>
            {
                ApiError::Internal(error.into())
            }
            LockError::RedisConnection(_) | LockError::Redis(_) | LockError::Timeout { .. } => {
                // The cause names hosts: logged here, not answered.
                tracing::warn!(%error, "the lock store is unavailable");
                ApiError::Unavailable("the lock store is unavailable; retry shortly".to_owned())
            }
            other => ApiError::Internal(other.into()),
        }
    }
}

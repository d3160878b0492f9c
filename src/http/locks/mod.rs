//! `/api/v1/locks`: who holds which job lock (admin).

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub use crate::lock::Lock;
use crate::state::AppState;

mod list;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list::list_locks))
}

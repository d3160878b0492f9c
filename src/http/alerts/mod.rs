//! `/api/v1/alerts`: execution alerts, newest first (CONTRACT §3).

mod list;

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::state::AppState;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list::list_alerts))
}

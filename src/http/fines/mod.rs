//! `/api/v1/fines`: the fines the settlement job accrued and settled, and voiding them.

mod get;
mod list;
mod void;

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::resource::Resource;
use crate::state::AppState;
pub use crate::store::fines::{Fine, fine_status_schema};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list::list_fines))
        .routes(routes!(get::get_fine))
        .routes(routes!(void::void_fine))
}

impl Resource for Fine {
    const NAME: &'static str = "fine";
}

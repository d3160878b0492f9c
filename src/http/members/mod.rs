//! `/api/v1/members`: members, their balance, ledger and payments.

mod create;
mod get;
mod ledger;
mod list;
mod notifications;
mod payments;

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::error::ApiError;
use super::resource::{Resource, not_found};
use crate::domain::MemberId;
use crate::state::AppState;
use crate::store;
pub use crate::store::members::Member;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create::create_member, list::list_members))
        .routes(routes!(get::get_member))
        .routes(routes!(ledger::member_ledger))
        .routes(routes!(payments::create_payment))
        .routes(routes!(notifications::member_notifications))
}

/// 404 unless the member exists. The per-member lists need it: an empty page alone would not
/// tell a member with no entries yet from a member who was never registered.
async fn require_member(state: &AppState, member_id: MemberId) -> Result<(), ApiError> {
    if store::members::exists(&state.pool, member_id).await? {
        Ok(())
    } else {
        Err(not_found::<Member>())
    }
}

impl Resource for Member {
    const NAME: &'static str = "member";
}

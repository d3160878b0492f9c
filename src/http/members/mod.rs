//! `/api/v1/members`: members, their balance, ledger and payments.

mod create;
mod get;
mod ledger;
mod list;
mod notifications;
mod payments;

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::error::ApiError;
use crate::state::AppState;
use crate::store;
use crate::store::members::MemberRow;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create::create_member, list::list_members))
        .routes(routes!(get::get_member))
        .routes(routes!(ledger::member_ledger))
        .routes(routes!(payments::create_payment))
        .routes(routes!(notifications::member_notifications))
}

/// A member of the library and what they owe.
#[derive(Debug, Serialize, ToSchema)]
pub struct Member {
    pub id: i64,
    pub name: String,
    pub email: String,
    /// What the member owes, in cents: the sum of their ledger (negative means credit).
    pub balance_cents: i64,
    pub created_at: DateTime<Utc>,
}

impl From<MemberRow> for Member {
    fn from(row: MemberRow) -> Self {
        Member {
            id: row.id,
            name: row.name,
            email: row.email,
            balance_cents: row.balance_cents,
            created_at: row.created_at,
        }
    }
}

/// 404 unless the member exists. The per-member lists need it: an empty page alone would not
/// tell a member with no entries yet from a member who was never registered.
async fn require_member(state: &AppState, member_id: i64) -> Result<(), ApiError> {
    if store::members::exists(&state.pool, member_id).await? {
        Ok(())
    } else {
        Err(ApiError::NotFound("member"))
    }
}

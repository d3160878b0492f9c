use axum::extract::State;
use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa::openapi::schema::{Object, ObjectBuilder, Type};

use crate::domain::LedgerKind;
use crate::http::error::ApiError;
use crate::http::extract::{Json, Path, Query};
use crate::http::pagination::{InvalidPage, Page, PageParams};
use crate::state::AppState;
use crate::store;
use crate::store::ledger::LedgerEntryRow;

/// One movement on a member's account.
#[derive(Debug, Serialize, ToSchema)]
pub struct LedgerEntry {
    pub id: i64,
    pub member_id: i64,
    /// The fine a CHARGE or REVERSAL is for; null for a PAYMENT.
    pub fine_id: Option<i64>,
    #[schema(schema_with = ledger_kind_schema)]
    pub kind: LedgerKind,
    /// Signed from the library's side: CHARGE positive, REVERSAL and PAYMENT negative.
    pub amount_cents: i64,
    pub created_at: DateTime<Utc>,
}

impl From<LedgerEntryRow> for LedgerEntry {
    fn from(row: LedgerEntryRow) -> Self {
        LedgerEntry {
            id: row.id,
            member_id: row.member_id,
            fine_id: row.fine_id,
            kind: row.kind,
            amount_cents: row.amount_cents,
            created_at: row.created_at,
        }
    }
}

/// The schema of a ledger kind, listing the names [`LedgerKind`] owns.
fn ledger_kind_schema() -> Object {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(LedgerKind::ALL.map(LedgerKind::as_str)))
        .build()
}

/// A member's ledger, oldest entry first. Its sum is the member's `balance_cents`.
#[utoipa::path(
    get, path = "/{id}/ledger", tag = "members",
    params(("id" = i64, Path, description = "Member id"), PageParams),
    responses(
        (status = 200, description = "A page of ledger entries", body = Page<LedgerEntry>),
        (status = 404, description = "No such member"),
        InvalidPage,
    ),
)]
pub async fn member_ledger(
    State(state): State<AppState>,
    Path(member_id): Path<i64>,
    Query(params): Query<PageParams>,
) -> Result<Json<Page<LedgerEntry>>, ApiError> {
    let page = params.validate()?;
    super::require_member(&state, member_id).await?;
    let rows = store::ledger::list_for_member(&state.pool, member_id, page).await?;
    Ok(Json(Page::from_rows(rows, page, |e| e.id).map(LedgerEntry::from)))
}

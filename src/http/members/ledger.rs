use axum::extract::State;

use crate::http::error::{ApiError, Problem};
use crate::http::extract::{Json, Path, Query};
use crate::http::pagination::{Page, PageParams};
use crate::state::AppState;
use crate::store;
pub use crate::store::ledger::LedgerEntry;

/// A member's ledger, oldest entry first. Its sum is the member's `balance_cents`.
#[utoipa::path(
    get, path = "/{id}/ledger", tag = "members",
    params(("id" = i64, Path, description = "Member id"), PageParams),
    responses(
        (status = 200, description = "A page of ledger entries", body = Page<LedgerEntry>),
        (status = 400, description = "Malformed id or query", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such member", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid limit or cursor", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
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

use axum::extract::State;

use super::Member;
use crate::domain::MemberId;
use crate::http::error::ApiError;
use crate::http::extract::{Json, Path};
use crate::http::pagination::{Page, PageParams, PageQuery};
use crate::http::read::read;
use crate::http::resource::{NoSuch, not_found};
use crate::state::AppState;
use crate::store;
pub use crate::store::ledger::LedgerEntry;

/// A member's ledger, oldest entry first. Its sum is the member's `balance_cents`.
#[utoipa::path(
    get, path = "/{id}/ledger", tag = "members",
    params(("id" = i64, Path, description = "Member id"), PageParams),
    responses(
        (status = 200, description = "A page of ledger entries", body = Page<LedgerEntry>),
        NoSuch<Member>,
    ),
)]
pub async fn member_ledger(
    State(state): State<AppState>,
    Path(member_id): Path<MemberId>,
    PageQuery(page): PageQuery,
) -> Result<Json<Page<LedgerEntry>>, ApiError> {
    let rows = read(&state, async |connection| {
        store::ledger::page_of_member(connection, member_id, page).await
    })
    .await?
    .ok_or_else(not_found::<Member>)?;
    Ok(Json(Page::from_rows(rows, page, |e| e.id).map(LedgerEntry::from)))
}

use axum::extract::State;

use super::Member;
use crate::domain::MemberId;
use crate::http::error::ApiError;
use crate::http::extract::{Json, Path};
use crate::http::pagination::{Page, PageParams, PageQuery};
use crate::http::resource::NoSuch;
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
    let mut connection = state.reads.acquire().await?;
    let rows = store::ledger::page_of_member(&mut *connection, member_id, page).await;
    let rows = connection.check(rows)?.ok_or(ApiError::NotFound("member"))?;
    Ok(Json(Page::from_rows(rows, page, |e| e.id).map(LedgerEntry::from)))
}

use axum::extract::State;

use super::Member;
use crate::http::error::ApiError;
use crate::http::extract::Json;
use crate::http::pagination::{Page, PageParams, PageQuery};
use crate::state::AppState;
use crate::store;

/// Members in registration order.
#[utoipa::path(
    get, path = "", tag = "members",
    params(PageParams),
    responses(
        (status = 200, description = "A page of members", body = Page<Member>),
    ),
)]
pub async fn list_members(
    State(state): State<AppState>,
    PageQuery(page): PageQuery,
) -> Result<Json<Page<Member>>, ApiError> {
    let rows = store::members::list(&state.pool, page).await?;
    Ok(Json(Page::from_rows(rows, page, |m| m.id.0).map(Member::from)))
}

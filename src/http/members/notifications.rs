use axum::extract::State;

use super::Member;
use crate::domain::MemberId;
use crate::http::error::ApiError;
use crate::http::extract::{Json, Path};
use crate::http::pagination::{Page, PageParams, PageQuery};
use crate::http::resource::NoSuch;
use crate::state::AppState;
use crate::store;
pub use crate::store::notifications::Notification;

/// A member's loan reminders, oldest first: at most one of each kind per loan.
#[utoipa::path(
    get, path = "/{id}/notifications", tag = "members",
    params(("id" = i64, Path, description = "Member id"), PageParams),
    responses(
        (status = 200, description = "A page of notifications", body = Page<Notification>),
        NoSuch<Member>,
    ),
)]
pub async fn member_notifications(
    State(state): State<AppState>,
    Path(member_id): Path<MemberId>,
    PageQuery(page): PageQuery,
) -> Result<Json<Page<Notification>>, ApiError> {
    super::require_member(&state, member_id).await?;
    let rows = store::notifications::list_for_member(&state.pool, member_id, page).await?;
    Ok(Json(Page::from_rows(rows, page, |n| n.id).map(Notification::from)))
}

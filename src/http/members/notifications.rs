use axum::extract::State;
use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use crate::http::error::ApiError;
use crate::http::extract::{Json, Path, Query};
use crate::http::pagination::{InvalidPage, Page, PageParams};
use crate::reminders::ReminderKind;
use crate::state::AppState;
use crate::store;
use crate::store::notifications::NotificationRow;

/// A reminder sent to a member about one of their loans.
#[derive(Debug, Serialize, ToSchema)]
pub struct Notification {
    pub id: i64,
    pub loan_id: i64,
    pub member_id: i64,
    /// `DUE_TOMORROW` (the day before `due_on`) or `OVERDUE` (the day after).
    pub kind: ReminderKind,
    pub sent_at: DateTime<Utc>,
}

impl From<NotificationRow> for Notification {
    fn from(row: NotificationRow) -> Self {
        Notification {
            id: row.id,
            loan_id: row.loan_id,
            member_id: row.member_id,
            kind: row.kind,
            sent_at: row.sent_at,
        }
    }
}

/// A member's loan reminders, oldest first: at most one of each kind per loan.
#[utoipa::path(
    get, path = "/{id}/notifications", tag = "members",
    params(("id" = i64, Path, description = "Member id"), PageParams),
    responses(
        (status = 200, description = "A page of notifications", body = Page<Notification>),
        (status = 404, description = "No such member"),
        InvalidPage,
    ),
)]
pub async fn member_notifications(
    State(state): State<AppState>,
    Path(member_id): Path<i64>,
    Query(params): Query<PageParams>,
) -> Result<Json<Page<Notification>>, ApiError> {
    let page = params.validate()?;
    super::require_member(&state, member_id).await?;
    let rows = store::notifications::list_for_member(&state.pool, member_id, page).await?;
    Ok(Json(Page::from_rows(rows, page, |n| n.id).map(Notification::from)))
}

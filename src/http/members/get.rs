use axum::extract::State;

use super::Member;
use crate::domain::MemberId;
use crate::http::error::ApiError;
use crate::http::extract::{Json, Path};
use crate::state::AppState;
use crate::store;

/// A member with their current balance.
#[utoipa::path(
    get, path = "/{id}", tag = "members",
    params(("id" = i64, Path, description = "Member id")),
    responses(
        (status = 200, description = "The member", body = Member),
        (status = 404, description = "No such member"),
    ),
)]
pub async fn get_member(State(state): State<AppState>, Path(id): Path<MemberId>) -> Result<Json<Member>, ApiError> {
    let mut connection = state.reads.acquire().await?;
    let found = store::members::find(&mut *connection, id).await;
    let row = connection.check(found)?.ok_or(ApiError::NotFound("member"))?;
    Ok(Json(row))
}

use axum::extract::State;

use super::Member;
use crate::domain::MemberId;
use crate::http::error::ApiError;
use crate::http::extract::Path;
use crate::http::read::read;
use crate::http::resource::{Found, found};
use crate::state::AppState;
use crate::store;

/// A member with their current balance.
#[utoipa::path(
    get, path = "/{id}", tag = "members",
    params(("id" = i64, Path, description = "Member id")),
    responses(Found<Member>),
)]
pub async fn get_member(State(state): State<AppState>, Path(id): Path<MemberId>) -> Result<Found<Member>, ApiError> {
    found(read(&state, async |connection| store::members::find(connection, id).await).await?)
}

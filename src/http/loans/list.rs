use axum::extract::State;
use serde::Deserialize;
use utoipa::IntoParams;

use super::{Loan, LoanStatus};
use crate::domain::MemberId;
use crate::http::error::ApiError;
use crate::http::extract::{Json, Query};
use crate::http::pagination::{Page, page_request};
use crate::http::read::read;
use crate::state::AppState;
use crate::store;
use crate::store::loans::LoanFilter;

/// Filters and page of `GET /api/v1/loans`, in one struct: the query string is read once, and a
/// parameter none of these name is a 400. (The page fields are repeated rather than flattened
/// from [`PageParams`](crate::http::pagination::PageParams), as in `fines/list.rs`.)
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LoanListParams {
    /// Only this member's loans.
    #[param(value_type = Option<i64>)]
    pub member_id: Option<MemberId>,
    /// Only loans with this status today: `open` (not yet due), `overdue`, or `returned`.
    pub status: Option<LoanStatus>,
    /// Items per page, 1 to 500 (default 50).
    pub limit: Option<i64>,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

/// Loans in the order they were made, optionally by member and status.
#[utoipa::path(
    get, path = "", tag = "loans",
    params(LoanListParams),
    responses(
        (status = 200, description = "A page of loans", body = Page<Loan>),
        (status = 400, description = "Malformed query, such as an unknown status"),
    ),
)]
pub async fn list_loans(
    State(state): State<AppState>,
    Query(params): Query<LoanListParams>,
) -> Result<Json<Page<Loan>>, ApiError> {
    let page = page_request(params.limit, params.cursor.as_deref())?;
    let (today, rows) = read(&state, async |connection| {
        let today = store::clock::business_today(&mut *connection, state.settings.business_tz).await?;
        let filter = LoanFilter {
            member_id: params.member_id,
            status: params.status,
            today,
        };
        Ok((today, store::loans::list(connection, filter, page).await?))
    })
    .await?;
    Ok(Json(
        Page::from_rows(rows, page, |l| l.id.0).map(|row| Loan::new(row, today)),
    ))
}

use axum::extract::State;
use chrono::NaiveDate;
use serde::Deserialize;
use utoipa::IntoParams;

use super::{Fine, fine_status_schema};
use crate::domain::{FineStatus, month_start};
use crate::domain::{LoanId, MemberId};
use crate::http::error::ApiError;
use crate::http::extract::{Json, Query};
use crate::http::pagination::{Page, PageRequest, page_request};
use crate::http::read::read;
use crate::state::AppState;
use crate::store;
use crate::store::fines::FineFilter;

/// Filters and page of `GET /api/v1/fines`.
///
/// The page fields are repeated rather than `#[serde(flatten)]`ed from
/// [`PageParams`](crate::http::pagination::PageParams): flattening makes serde read every query
/// value as a string, and `limit=5` would then fail to parse.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct FineListParams {
    /// Only this member's fines.
    #[param(value_type = Option<i64>)]
    pub member_id: Option<MemberId>,
    /// Only this loan's fines.
    #[param(value_type = Option<i64>)]
    pub loan_id: Option<LoanId>,
    /// Only fines in this status (PENDING, SETTLED or VOID; case is ignored).
    #[param(schema_with = fine_status_schema)]
    pub status: Option<String>,
    /// Only fines for this month: its first day, `YYYY-MM-01`.
    #[serde(default, deserialize_with = "crate::http::dates::optional_date")]
    pub settle_month: Option<NaiveDate>,
    /// Items per page, 1 to 500 (default 50).
    pub limit: Option<i64>,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

impl FineListParams {
    fn validate(self) -> Result<(FineFilter, PageRequest), ApiError> {
        let status = self
            .status
            .map(|s| s.parse::<FineStatus>())
            .transpose()
            .map_err(|_| ApiError::invalid("status", "must be PENDING, SETTLED or VOID"))?;
        if let Some(month) = self.settle_month
            && month != month_start(month)
        {
            return Err(ApiError::invalid(
                "settle_month",
                "must be the first day of a month, YYYY-MM-01",
            ));
        }
        let page = page_request(self.limit, self.cursor.as_deref())?;
        let filter = FineFilter {
            member_id: self.member_id,
            loan_id: self.loan_id,
            status,
            settle_month: self.settle_month,
        };
        Ok((filter, page))
    }
}

/// Fines in the order they were first accrued, optionally filtered.
#[utoipa::path(
    get, path = "", tag = "fines",
    params(FineListParams),
    responses(
        (status = 200, description = "A page of fines", body = Page<Fine>),
        (status = 422, description = "Invalid filter, limit or cursor"),
    ),
)]
pub async fn list_fines(
    State(state): State<AppState>,
    Query(params): Query<FineListParams>,
) -> Result<Json<Page<Fine>>, ApiError> {
    let (filter, page) = params.validate()?;
    let rows = read(&state, async |connection| {
        store::fines::list(connection, filter, page).await
    })
    .await?;
    Ok(Json(Page::from_rows(rows, page, |f| f.id).map(Fine::from)))
}

use axum::extract::State;

use super::Loan;
use crate::domain::LoanId;
use crate::http::error::ApiError;
use crate::http::extract::Path;
use crate::http::resource::{Found, not_found};
use crate::state::AppState;
use crate::store;

/// A loan, with its status on today's business date.
#[utoipa::path(
    get, path = "/{id}", tag = "loans",
    params(("id" = i64, Path, description = "Loan id")),
    responses(Found<Loan>),
)]
pub async fn get_loan(State(state): State<AppState>, Path(id): Path<LoanId>) -> Result<Found<Loan>, ApiError> {
    let row = store::loans::find(&state.pool, id)
        .await?
        .ok_or_else(not_found::<Loan>)?;
    let today = store::clock::business_today(&state.pool, state.settings.business_tz).await?;
    Ok(Found(Loan::new(row, today)))
}

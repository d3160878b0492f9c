use axum::extract::State;

use super::Loan;
use crate::domain::LoanId;
use crate::http::error::ApiError;
use crate::http::extract::{Json, Path};
use crate::state::AppState;
use crate::store;

/// A loan, with its status on today's business date.
#[utoipa::path(
    get, path = "/{id}", tag = "loans",
    params(("id" = i64, Path, description = "Loan id")),
    responses(
        (status = 200, description = "The loan", body = Loan),
        (status = 404, description = "No such loan"),
    ),
)]
pub async fn get_loan(State(state): State<AppState>, Path(id): Path<LoanId>) -> Result<Json<Loan>, ApiError> {
    let row = store::loans::find(&state.pool, id)
        .await?
        .ok_or(ApiError::NotFound("loan"))?;
    let today = store::clock::business_today(&state.pool, state.settings.business_tz).await?;
    Ok(Json(Loan::new(row, today)))
}

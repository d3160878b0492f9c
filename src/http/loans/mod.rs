//! `/api/v1/loans`: lending copies to members and taking them back.

mod create;
mod get;
mod list;
mod return_loan;

use chrono::{DateTime, NaiveDate, Utc};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::domain::{LoanId, MemberId};
use crate::state::AppState;
use crate::store::loans::LoanRow;
pub use crate::store::loans::LoanStatus;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create::create_loan, list::list_loans))
        .routes(routes!(get::get_loan))
        .routes(routes!(return_loan::return_loan))
}

/// A loan of one book copy to one member.
#[derive(Debug, Serialize, ToSchema)]
pub struct Loan {
    #[schema(value_type = i64)]
    pub id: LoanId,
    #[schema(value_type = i64)]
    pub member_id: MemberId,
    pub book_id: i64,
    pub borrowed_on: NaiveDate,
    /// The last day the book may be kept without a fine.
    pub due_on: NaiveDate,
    /// When the book came back; null while the loan is open.
    pub returned_at: Option<DateTime<Utc>>,
    /// The business date of `returned_at`: the last day that can count as overdue.
    pub returned_on: Option<NaiveDate>,
    /// Fine per overdue day, copied from the policy when the loan was made.
    pub daily_fine_cents: i64,
    /// Where the loan stands on today's business date.
    pub status: LoanStatus,
    pub created_at: DateTime<Utc>,
}

impl Loan {
    /// The loan as seen on business date `today`.
    pub fn new(row: LoanRow, today: NaiveDate) -> Self {
        Loan {
            status: LoanStatus::of(&row, today),
            id: row.id,
            member_id: row.member_id,
            book_id: row.book_id,
            borrowed_on: row.borrowed_on,
            due_on: row.due_on,
            returned_at: row.returned_at,
            returned_on: row.returned_on,
            daily_fine_cents: row.daily_fine_cents,
            created_at: row.created_at,
        }
    }

    pub fn location(&self) -> String {
        format!("/api/v1/loans/{}", self.id)
    }
}

impl super::resource::Resource for Loan {
    const NAME: &'static str = "loan";
}

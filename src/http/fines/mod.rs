//! `/api/v1/fines`: the fines the settlement job accrued and settled, and voiding them.

mod get;
mod list;
mod void;

use chrono::{DateTime, NaiveDate, Utc};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa::openapi::schema::{Object, ObjectBuilder, Type};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::domain::FineStatus;
use crate::state::AppState;
use crate::store::fines::FineRow;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list::list_fines))
        .routes(routes!(get::get_fine))
        .routes(routes!(void::void_fine))
}

/// A loan's fine for one month.
#[derive(Debug, Serialize, ToSchema)]
pub struct Fine {
    pub id: i64,
    pub loan_id: i64,
    pub member_id: i64,
    /// The first day of the month the fine is for.
    pub settle_month: NaiveDate,
    /// Overdue days of the loan in that month, up to `accrued_through`.
    pub overdue_days: i32,
    /// `overdue_days` × the loan's daily fine.
    pub amount_cents: i64,
    /// The last day counted toward the fine.
    pub accrued_through: NaiveDate,
    #[schema(schema_with = fine_status_schema)]
    pub status: FineStatus,
    pub settled_at: Option<DateTime<Utc>>,
    pub voided_at: Option<DateTime<Utc>>,
    pub void_reason: Option<String>,
    /// The fencing token of the settlement run that last wrote the fine.
    pub fencing_token: i64,
}

impl From<FineRow> for Fine {
    fn from(row: FineRow) -> Self {
        Fine {
            id: row.id,
            loan_id: row.loan_id,
            member_id: row.member_id,
            settle_month: row.settle_month,
            overdue_days: row.overdue_days,
            amount_cents: row.amount_cents,
            accrued_through: row.accrued_through,
            status: row.status,
            settled_at: row.settled_at,
            voided_at: row.voided_at,
            void_reason: row.void_reason,
            fencing_token: row.fencing_token,
        }
    }
}

/// The schema of a fine status, listing the names [`FineStatus`] owns (the domain type knows
/// nothing of OpenAPI).
fn fine_status_schema() -> Object {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(FineStatus::ALL.map(FineStatus::as_str)))
        .description(Some("A fine's status: PENDING → SETTLED → VOID, or PENDING → VOID"))
        .build()
}

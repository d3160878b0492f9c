//! Fines (`fine_record`) as the API sees them: reads, and voiding, the one change the API makes.
//!
//! The settlement job creates and settles fines; the API only lists them and voids them. A void
//! runs in the caller's transaction: [`lock`] the row, decide from its status, [`void`] it with a
//! state-conditioned update, and post the reversal (see `store::ledger`) before committing.

use chrono::{DateTime, NaiveDate, Utc};
use serde::Serialize;
use sqlx::PgConnection;
use utoipa::ToSchema;
use utoipa::openapi::schema::{Object, ObjectBuilder, Type};

use super::PageRequest;
use super::rows::{find_by_id, returning_rows, select_rows};
use crate::domain::{FencingToken, FineStatus, LoanId, MemberId};

// The row as stored is the shape the API serves: one type (the doc comment below is the
// OpenAPI description).
/// A loan's fine for one month.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Fine {
    pub id: i64,
    #[schema(value_type = i64)]
    pub loan_id: LoanId,
    #[schema(value_type = i64)]
    pub member_id: MemberId,
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
    #[schema(value_type = i64)]
    pub fencing_token: FencingToken,
}

/// The schema of a fine status, listing the names [`FineStatus`] owns (inline, as the API has
/// always described it, rather than a schema of its own).
pub fn fine_status_schema() -> Object {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(FineStatus::ALL.map(FineStatus::as_str)))
        .description(Some("A fine's status: PENDING → SETTLED → VOID, or PENDING → VOID"))
        .build()
}

/// Which fines to list. Every filter is optional; the given ones must all match.
#[derive(Debug, Clone, Copy, Default)]
pub struct FineFilter {
    pub member_id: Option<MemberId>,
    pub loan_id: Option<LoanId>,
    pub status: Option<FineStatus>,
    pub settle_month: Option<NaiveDate>,
}

pub async fn find(executor: impl sqlx::PgExecutor<'_>, id: i64) -> sqlx::Result<Option<Fine>> {
    find_by_id!(Fine, executor, id)
}

/// A page of fines in id order.
///
/// Three statements rather than one with `($n is null or column = $n)` everywhere: sqlx keeps
/// statements prepared, and after a few runs Postgres may switch to a generic plan, which cannot
/// pick an index from a parameter that might be null. Each statement here adds to the filters
/// every page has (`page_of_fines!`) the filter that has an index (`fine_record_member`,
/// `fine_record_loan_month_key`), so its plan never degrades into a scan of the whole table.
pub async fn list(
    executor: impl sqlx::PgExecutor<'_>,
    filter: FineFilter,
    page: PageRequest,
) -> sqlx::Result<Vec<Fine>> {
    match (filter.member_id, filter.loan_id) {
        (Some(member_id), loan_id) => {
            page_of_fines!(
                filter,
                page,
                // walks fine_record_member (member_id, id) in order
                "and member_id = $5 and ($6::bigint is null or loan_id = $6)",
                member_id.0,
                loan_id.map(|id| id.0)
            )
            .fetch_all(executor)
            .await
        }
        // a loan has one fine per month: few rows, found by fine_record_loan_month_key
        (None, Some(loan_id)) => {
            page_of_fines!(filter, page, "and loan_id = $5", loan_id.0)
                .fetch_all(executor)
                .await
        }
        (None, None) => page_of_fines!(filter, page, "").fetch_all(executor).await,
    }
}

/// The statement of a page of fines in id order: `$1` the cursor, `$2` the status and `$3` the
/// month (`null`: any), `$4` the rows to fetch; `$narrow` adds conditions on `$5` onwards, bound
/// to `$arg`s.
macro_rules! page_of_fines {
    ($filter:expr, $page:expr, $narrow:tt $(, $arg:expr)*) => {
        select_rows!(
            Fine,
            r#"
            where id > $1
              and ($2::text is null or status = $2)
              and ($3::date is null or settle_month = $3)
            "# + $narrow + r#"
            order by id
            limit $4
            "#,
            $page.after,
            $filter.status.map(FineStatus::as_str),
            $filter.settle_month,
            $page.fetch()
            $(, $arg)*
        )
    };
}
use page_of_fines;

/// Locks the fine's row until the caller's transaction ends and returns it as it is now.
///
/// Whoever changes a fine (a void here, the settlement job) holds this lock, so the status read
/// here is the one the caller's update will see: a fine the job settles while a void waits is
/// voided as SETTLED, with its reversal.
pub async fn lock(conn: &mut PgConnection, id: i64) -> sqlx::Result<Option<Fine>> {
    select_rows!(Fine, "where id = $1 for update", id)
        .fetch_optional(conn)
        .await
}

/// Voids the fine if it is still in status `from`; `None` when it is not.
///
/// The status condition makes the update safe even without [`lock`]: two voids can never both
/// succeed. `fencing_token` is left alone: it names the settlement run that last wrote the
/// amount, which a void does not change.
pub async fn void(conn: &mut PgConnection, id: i64, from: FineStatus, reason: &str) -> sqlx::Result<Option<Fine>> {
    returning_rows!(
        Fine,
        r#"
        update fine_record
        set status = $3, voided_at = now(), void_reason = $4
        where id = $1 and status = $2
        "#,
        id,
        from.as_str(),
        FineStatus::Void.as_str(),
        reason
    )
    .fetch_optional(conn)
    .await
}

//! Loans: lending a copy, returning it, and listing loans by member and status.
//!
//! The database is the judge of the rules that concurrency could break: the partial unique index
//! `loan_one_open_per_book` keeps a copy on one open loan, and the return is a state-conditioned
//! update, so two clients racing on the same copy or the same return cannot both win.

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::PageRequest;
use super::rows::{find_by_id, returning_rows, select_rows};
use crate::domain::{LoanId, MemberId};

/// A loan as stored. The API's loan is a type of its own (`http::loans::Loan`): it adds a
/// `status` judged on the business date of each request ([`LoanStatus::of`]), which no column
/// holds.
#[derive(Debug, Clone)]
pub struct LoanRow {
    pub id: LoanId,
    pub member_id: MemberId,
    pub book_id: i64,
    pub borrowed_on: NaiveDate,
    pub due_on: NaiveDate,
    pub returned_at: Option<DateTime<Utc>>,
    /// The business date of `returned_at`, fixed at the time of the return.
    pub returned_on: Option<NaiveDate>,
    pub daily_fine_cents: i64,
    pub created_at: DateTime<Utc>,
}

/// Where a loan stands on a business date.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema, strum::IntoStaticStr)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum LoanStatus {
    /// Not returned, and not past its due date.
    Open,
    /// Returned.
    Returned,
    /// Not returned and past its due date: today is an overdue day.
    Overdue,
}

impl LoanStatus {
    /// The status of `loan` on business date `today`. A loan is overdue from the day after
    /// `due_on`, the first day that counts toward a fine.
    pub fn of(loan: &LoanRow, today: NaiveDate) -> Self {
        if loan.returned_at.is_some() {
            LoanStatus::Returned
        } else if loan.due_on < today {
            LoanStatus::Overdue
        } else {
            LoanStatus::Open
        }
    }

    /// The name the list queries compare with (the same as on the wire).
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// The terms of a new loan, validated by the caller.
#[derive(Debug, Clone, Copy)]
pub struct NewLoan {
    pub member_id: MemberId,
    pub book_id: i64,
    pub borrowed_on: NaiveDate,
    pub due_on: NaiveDate,
    pub daily_fine_cents: i64,
}

/// Which loans a list returns.
#[derive(Debug, Clone, Copy)]
pub struct LoanFilter {
    pub member_id: Option<MemberId>,
    pub status: Option<LoanStatus>,
    /// The business date `status` is judged on.
    pub today: NaiveDate,
}

/// Lends a copy. Fails on `loan_one_open_per_book` when the copy is on an open loan, and on
/// `loan_member_id_fkey` / `loan_book_id_fkey` when the member or the book does not exist.
pub async fn insert(executor: impl sqlx::PgExecutor<'_>, loan: &NewLoan) -> sqlx::Result<LoanRow> {
    returning_rows!(
        LoanRow,
        r#"
        insert into loan (member_id, book_id, borrowed_on, due_on, daily_fine_cents)
        values ($1, $2, $3, $4, $5)
        "#,
        loan.member_id.0,
        loan.book_id,
        loan.borrowed_on,
        loan.due_on,
        loan.daily_fine_cents
    )
    .fetch_one(executor)
    .await
}

pub async fn find(executor: impl sqlx::PgExecutor<'_>, id: LoanId) -> sqlx::Result<Option<LoanRow>> {
    find_by_id!(LoanRow, executor, id.0)
}

/// Marks an open loan returned at `returned_at` (business date `returned_on`).
///
/// `None` when no open loan has this id: it does not exist, or it was returned already (also by
/// a concurrent request: the second update waits for the first and then no longer matches).
/// Fails on `loan_returned_not_before_borrowed` when `returned_on` is before `borrowed_on`.
pub async fn mark_returned(
    executor: impl sqlx::PgExecutor<'_>,
    id: LoanId,
    returned_at: DateTime<Utc>,
    returned_on: NaiveDate,
) -> sqlx::Result<Option<LoanRow>> {
    returning_rows!(
        LoanRow,
        r#"
        update loan set returned_at = $2, returned_on = $3
        where id = $1 and returned_at is null
        "#,
        id.0,
        returned_at,
        returned_on
    )
    .fetch_optional(executor)
    .await
}

/// A page of loans in id order.
///
/// One statement per shape rather than `($5 is null or member_id = $5)`: a cached generic plan
/// for that form cannot use the `loan_member_id` index, and a member's few loans would then cost
/// a scan of the whole table.
pub async fn list(
    executor: impl sqlx::PgExecutor<'_>,
    filter: LoanFilter,
    page: PageRequest,
) -> sqlx::Result<Vec<LoanRow>> {
    match filter.member_id {
        Some(member_id) => {
            page_of_loans!(filter, page, "and member_id = $5", member_id.0)
                .fetch_all(executor)
                .await
        }
        None => page_of_loans!(filter, page, "").fetch_all(executor).await,
    }
}

/// The statement of a page of loans in id order: `$1` the status (`null`: any) judged on `$2`,
/// today's business date, `$3` the cursor, `$4` the rows to fetch; `$narrow` adds conditions on
/// `$5` onwards, bound to `$arg`s.
macro_rules! page_of_loans {
    ($filter:expr, $page:expr, $narrow:tt $(, $arg:expr)*) => {
        select_rows!(
            LoanRow,
            r#"
            -- the same rule as LoanStatus::of, with $2 as today's business date
            where case $1::text
                    when 'returned' then returned_at is not null
                    when 'overdue' then returned_at is null and due_on < $2
                    when 'open' then returned_at is null and due_on >= $2
                    else true
                  end
              and id > $3
            "# + $narrow + r#"
            order by id
            limit $4
            "#,
            $filter.status.map(LoanStatus::as_str),
            $filter.today,
            $page.after,
            $page.fetch()
            $(, $arg)*
        )
    };
}
use page_of_loans;

/// Whether any loan was recorded or changed since the settlement last accrued it (the
/// `loan_change` queue is not empty).
pub async fn changes_pending(executor: impl sqlx::PgExecutor<'_>) -> sqlx::Result<bool> {
    sqlx::query_scalar!(r#"select exists (select 1 from loan_change) as "pending!""#)
        .fetch_one(executor)
        .await
}

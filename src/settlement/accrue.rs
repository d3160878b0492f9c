//! Step 1 of a business date: accrue the month-of-`D` fine of every loan overdue in that month.
//!
//! For date `D` in month `M` (`M_start..M_end`), a loan has overdue days in `M` up to `D` from
//! `lo = greatest(due_on + 1, M_start)` through `hi = least(D, returned_on)` when `lo <= hi`. Its
//! fine row `(loan_id, settle_month = M_start)` is upserted with `overdue_days = hi - lo + 1`,
//! the amount, and `accrued_through = hi`.
//!
//! `hi` is `min(D, M_end, returned_on)` (`D <= M_end`), the same value as
//! `domain::accrue(..).accrued_through`, and the amount is a function of the loan and `hi` only.
//! The upsert moves a row only forward (`accrued_through < excluded.accrued_through`) and only
//! while it is PENDING, so:
//! - a rerun of `D` writes nothing (same `hi`);
//! - an earlier date run after a later one writes nothing (smaller `hi`);
//! - a SETTLED or VOID fine is history and is never touched.
//!
//! Loans returned before `M_start`, returned on or before their due date, or not yet due on `D`
//! contribute nothing. The candidate filter says so in terms the planner can use: open loans by
//! `loan_open_due_on`, returned ones by `loan_returned_on`, or, when most loans are candidates,
//! one pass over the primary key (which the keyset batches walk anyway).

use chrono::NaiveDate;
use sqlx::PgConnection;
use tokio_util::sync::CancellationToken;

use super::batches::{upsert_fines, walk_batches};
use super::{RunContext, SettleError};
use crate::domain::month_start;

/// Upserts the month-of-`date` fines in batches of `ctx.batch_size` loans, walking `loan.id` in
/// keyset order. Returns the number of fines inserted or moved forward.
///
/// Runs in the caller's (fenced) transaction; checks `abort` between batches.
pub async fn accrue(
    conn: &mut PgConnection,
    ctx: &RunContext,
    date: NaiveDate,
    abort: &CancellationToken,
) -> Result<i64, SettleError> {
    walk_batches(conn, "accrue", ACCRUE_BATCH, ctx, (date, month_start(date)), abort).await
}

/// One batch: $1 last loan id of the previous batch, $2 batch size, $3 the business date D,
/// $4 first day of D's month, $5 fencing token.
const ACCRUE_BATCH: &str = concat!(
    r#"
    with batch as (
        select l.id, l.member_id, l.daily_fine_cents,
               greatest(l.due_on + 1, $4::date) as first_day,
               -- least() skips nulls: an open loan counts through D
               least($3::date, l.returned_on) as last_day
        from loan l
        where l.id > $1
          and l.due_on < $3
          -- open, or returned in the month after at least one overdue day; each branch
          -- matches one partial index (loan_open_due_on, loan_returned_on)
          and (l.returned_on is null
               or (l.returned_on >= $4 and l.returned_on > l.due_on))
        order by l.id
        limit $2
    ),
    upserted as ("#,
    upsert_fines!(settle_month: "$4", from: "from batch"),
    r#"    )
    select (select max(id) from batch) as last_id,
           (select count(*) from batch) as scanned,
           (select count(*) from upserted) as written
"#
);

//! Step 1b of a business date: accrue the loans recorded or changed since they were last accrued.
//!
//! The nightly accrual ([`super::accrue`]) brings the month of the date it settles up to date for
//! every loan. That is enough for a loan the service knew all along, but not for one recorded
//! late: an import with a due date three months back, or a return back-dated into a month whose
//! dates were settled before the return was recorded. Section 1 of docs/CONTRACT.md does not care when a
//! loan was recorded, so neither may its fines.
//!
//! Every insert of a loan, and every change of what its fine is computed from, queues the loan in
//! `loan_change` (triggers in the migration `completeness`). This step takes the queue in batches
//! and, for each queued loan, upserts every month from the start month through the month of the
//! as-of date `E` with the same formula and the same guards as the nightly accrual: amounts as of
//! `accrued_through = min(E, month end, returned_on)`, only PENDING rows, never backwards. Then
//! it deletes the queue rows it read, in the same fenced transaction: a rolled-back date leaves
//! them queued for the next run, and a change committed meanwhile adds a new row the next run
//! reads. The work is proportional to the loans recorded or changed, not to the history.
//!
//! `E` is the later of the date being settled and the latest date already settled: when a gap is
//! filled behind later SUCCESSes, the loans queued since those dates ran are brought up to the
//! latest settled date, not only to the gap's date, so no month between the two is left without
//! its fine. Months before the start month are never accrued (CONTRACT §1).

use chrono::NaiveDate;
use sqlx::PgConnection;
use tokio_util::sync::CancellationToken;

use super::batches::{upsert_fines, walk_batches};
use super::{RunContext, SettleError};
use crate::domain::month_start;

/// Accrues every queued loan as of `as_of`, in batches of `ctx.batch_size` queue rows, and takes
/// them off the queue. Returns the number of fines inserted or moved forward.
///
/// Runs in the caller's (fenced) transaction; checks `abort` between batches.
pub async fn accrue_changes(
    conn: &mut PgConnection,
    ctx: &RunContext,
    as_of: NaiveDate,
    abort: &CancellationToken,
) -> Result<i64, SettleError> {
    let start_month = month_start(ctx.start_date);
    walk_batches(conn, "accrue_changes", CHANGE_BATCH, ctx, (as_of, start_month), abort).await
}

/// One batch: $1 last queue id of the previous batch, $2 batch size, $3 the as-of date E,
/// $4 the start month (first day), $5 fencing token.
const CHANGE_BATCH: &str = concat!(
    r#"
    with batch as (
        select id, loan_id
        from loan_change
        where id > $1
        order by id
        limit $2
    ),
    months as (
        select l.id, l.member_id, l.daily_fine_cents, m::date as settle_month,
               greatest(l.due_on + 1, m::date) as first_day,
               -- least() skips nulls: an open loan counts through E
               least($3::date, (m + interval '1 month')::date - 1, l.returned_on) as last_day
        from loan l
        -- every month from the first overdue day (or the start month) through E or the return;
        -- timestamps without a zone, so the session's time zone plays no part
        cross join lateral generate_series(
            date_trunc('month', greatest(l.due_on + 1, $4::date)::timestamp),
            date_trunc('month', least($3::date, l.returned_on)::timestamp),
            interval '1 month') as m
        -- a loan queued twice in one batch is accrued once
        where l.id in (select loan_id from batch)
    ),
    -- the same formula and guards as the nightly accrual
    upserted as ("#,
    upsert_fines!(settle_month: "settle_month", from: "from months where last_day >= first_day"),
    r#"    ),
    -- executed whether or not it is read (a data-modifying `with`)
    taken as (
        delete from loan_change where id in (select id from batch)
    )
    select (select max(id) from batch) as last_id,
           (select count(*) from batch) as scanned,
           (select count(*) from upserted) as written
"#
);

//! Step 2 of a business date: every PENDING fine that is final on `D` becomes SETTLED and gets
//! its CHARGE.
//!
//! A PENDING fine is final on `D` when its month has ended by `D` or its loan was returned on or
//! before `D` (`domain::is_final`). Because a date may have been skipped, run out of order, or a
//! return back-dated after the last accrual, the amount a fine settles at is recomputed here from
//! the loan: all overdue days of its month up to `min(month end, returned_on)`
//! (`domain::final_fine`). A final fine with no overdue day left (its return was corrected to on
//! or before the due date) becomes VOID instead, with no CHARGE.
//!
//! One statement per batch does it all: pick up to `batch_size` fines `for update skip locked`
//! (a fine another transaction is voiding right now is skipped and, still final, settled by the
//! next date), update them under `where status = 'PENDING'`, and post the CHARGE of each settled
//! fine with `on conflict do nothing` on the unique `(fine_id, kind)` index. The fines are walked
//! through their queue, `fine_pending` (migration `20261206000010`), in the order of its key
//! `(settle_month, loan_id)` by keyset, so a PENDING fine that is not final yet is looked at once
//! per date, not once per batch; the batch deletes the queue rows of the fines it picked. The
//! queue holds every PENDING fine (triggers keep it so for every writer) and may hold fines that
//! left PENDING otherwise (a void): those are picked too, left as they are, and unqueued. Since
//! no index of `fine_record` names `status` (once the contract step dropped
//! `fine_record_pending`), the settle update is a HOT update: no index entry per fine.

use chrono::NaiveDate;
use sqlx::PgConnection;
use tokio_util::sync::CancellationToken;

use super::{RunContext, SettleError};
use crate::domain::month_start;

/// The `void_reason` of a fine voided by the settlement.
pub const NO_OVERDUE_DAYS: &str = "no overdue days after return correction";

/// What the settle step wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SettleCounts {
    pub settled: i64,
    pub voided: i64,
    pub charged: i64,
}

/// Settles (or voids) every PENDING fine final on `date`, in batches of `ctx.batch_size`.
///
/// Runs in the caller's (fenced) transaction; checks `abort` between batches.
pub async fn settle(
    conn: &mut PgConnection,
    ctx: &RunContext,
    date: NaiveDate,
    abort: &CancellationToken,
) -> Result<SettleCounts, SettleError> {
    // Months that have ended by `date`: every settle_month before the month of the next day.
    let ended_before = month_start(date.succ_opt().unwrap_or(date));
    // Keyset position in (settle_month, loan_id) order; below any real fine to start with.
    let mut after = (NaiveDate::from_ymd_opt(1, 1, 1).expect("a valid date"), 0_i64);
    let mut counts = SettleCounts::default();
    // The batches must walk `fine_pending` in key order and stop after `batch_size` final
    // fines. The planner's alternative, collecting every PENDING fine and sorting them, is
    // chosen whenever it underestimates their number, and it always does here: statistics only
    // know committed rows, and the accrual has just added a month of fines in this transaction.
    // That plan re-reads all of them for every batch (measured: 0.5 s per batch of 20,000 over
    // 300,000 fines, against 0.05 s in key order). Without a sort to choose, it walks the index.
    sqlx::raw_sql("set local enable_sort = off").execute(&mut *conn).await?;
    loop {
        if abort.is_cancelled() {
            return Err(SettleError::Abandoned);
        }
        let batch = settle_batch(conn, after, ctx.batch_size, date, ended_before, ctx.fencing_token.0).await?;
        counts.settled += batch.settled;
        counts.voided += batch.voided;
        counts.charged += batch.charged;
        tracing::debug!(
            job.business_date = %date,
            job.step = "settle",
            job.scanned = batch.picked,
            job.rows = batch.settled + batch.voided,
            "settle batch"
        );
        match batch.last() {
            Some(last) if batch.picked == ctx.batch_size => after = last,
            // A short batch is the last one.
            _ => break,
        }
    }
    sqlx::raw_sql("set local enable_sort to default")
        .execute(&mut *conn)
        .await?;
    Ok(counts)
}

#[derive(sqlx::FromRow)]
struct SettleBatch {
    /// The (settle_month, loan_id) of the batch's last fine: the next batch starts after it.
    last_month: Option<NaiveDate>,
    last_loan: Option<i64>,
    picked: i64,
    settled: i64,
    voided: i64,
    charged: i64,
}

impl SettleBatch {
    fn last(&self) -> Option<(NaiveDate, i64)> {
        self.last_month.zip(self.last_loan)
    }
}

/// One batch: $1, $2 keyset (settle_month, loan_id) of the previous batch, $3 batch size, $4 the
/// business date D, $5 first day of the month after D's day (months before it have ended),
/// $6 fencing token, $7 the void reason.
const SETTLE_BATCH: &str = r#"
    with picked as (
        -- the queue row's and the fine's physical addresses too: the fine is locked until
        -- commit, so it stays there, and the update below finds it without a second walk of
        -- an index; nobody else deletes a queue row the walk is on (the date is fenced)
        select q.ctid as queued, f.ctid as row, f.id, f.settle_month, f.loan_id, l.daily_fine_cents,
               greatest(l.due_on + 1, f.settle_month) as first_day,
               -- the last day that can count: the month end, or the return if earlier
               least((f.settle_month + interval '1 month')::date - 1, l.returned_on) as last_day
        from fine_pending q
        join fine_record f on f.loan_id = q.loan_id and f.settle_month = q.settle_month
        join loan l on l.id = f.loan_id
        -- no `f.status = 'PENDING'` here: a queued fine that is no longer PENDING (voided, or
        -- settled by the previous release) is picked too, left alone below, and unqueued
        where (q.settle_month, q.loan_id) > ($1::date, $2::bigint)
          -- final on D: its month has ended, or its loan was returned on or before D
          and (f.settle_month < $5 or l.returned_on <= $4)
        order by q.settle_month, q.loan_id
        limit $3
        for update of f skip locked
    ),
    recomputed as (
        select row, id, daily_fine_cents,
               greatest(last_day - first_day + 1, 0) as days,
               -- a return corrected to before the month leaves nothing in it: keep the date
               -- inside the month (fine_record_accrued_in_month)
               greatest(last_day, settle_month) as through
        from picked
    ),
    changed as (
        -- changes no indexed column: a HOT update, no index entry (migration 20261206000010)
        update fine_record f
        set status = case when x.days > 0 then 'SETTLED' else 'VOID' end,
            overdue_days = x.days,
            amount_cents = x.days * x.daily_fine_cents,
            accrued_through = x.through,
            settled_at = case when x.days > 0 then now() end,
            voided_at = case when x.days = 0 then now() end,
            void_reason = case when x.days = 0 then $7 end,
            fencing_token = $6,
            -- stamped here, so the row trigger need not run (migration 20261205000210)
            updated_at = now()
        from recomputed x
        -- the picked addresses as one array: a TID scan of exactly those rows, whatever the
        -- planner estimates (joined on `ctid`, it chose a hash join over the whole table)
        where f.ctid = any (array(select row from picked)) and f.ctid = x.row and f.status = 'PENDING'
        returning f.id, f.member_id, f.status, f.amount_cents
    ),
    unqueued as (
        -- every picked fine is final and no longer PENDING once this statement commits
        delete from fine_pending q
        where q.ctid = any (array(select queued from picked))
    ),
    charged as (
        insert into ledger_entry (member_id, fine_id, kind, amount_cents, fencing_token)
        select member_id, id, 'CHARGE', amount_cents, $6
        from changed
        -- the ledger takes no zero CHARGE: a fine of a loan with a daily fine of 0 owes nothing
        where status = 'SETTLED' and amount_cents > 0
        on conflict (fine_id, kind) where fine_id is not null do nothing
        returning 1
    ),
    last_month as (
        select max(settle_month) as settle_month from picked
    )
    -- the keyset position of the batch's last fine: its month, and its loan in that month
    select (select settle_month from last_month) as last_month,
           (select max(loan_id) from picked where settle_month = (select settle_month from last_month))
               as last_loan,
           (select count(*) from picked) as picked,
           (select count(*) from changed where status = 'SETTLED') as settled,
           (select count(*) from changed where status = 'VOID') as voided,
           (select count(*) from charged) as charged
"#;

async fn settle_batch(
    conn: &mut PgConnection,
    after: (NaiveDate, i64),
    batch_size: i64,
    date: NaiveDate,
    ended_before: NaiveDate,
    fencing_token: i64,
) -> sqlx::Result<SettleBatch> {
    // Unnamed, so planned with this batch's values (see "Plans" in the module docs of
    // `settlement`).
    sqlx::query_as(SETTLE_BATCH)
        .bind(after.0)
        .bind(after.1)
        .bind(batch_size)
        .bind(date)
        .bind(ended_before)
        .bind(fencing_token)
        .bind(NO_OVERDUE_DAYS)
        .persistent(false)
        .fetch_one(conn)
        .await
}

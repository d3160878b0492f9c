//! The work of one business date, inside the caller's transaction: fence, accrue, accrue the
//! changed loans, settle.

use std::time::Instant;

use chrono::NaiveDate;
use sqlx::PgConnection;
use tokio_util::sync::CancellationToken;

use super::{DateCounts, RunContext, SettleError, accrue, changes, settle};
use crate::domain::business_date;
use crate::lock::fence;
use crate::store;

/// Accrues and settles business date `date` in the open transaction `tx` (`&mut *tx`).
///
/// The first statement is the fence guard: with a stale token nothing is written and the caller
/// gets [`SettleError::Fenced`]. Past the guard the token stays current until the transaction
/// ends (the guard holds a key-share lock on the lock row, which a takeover must wait for and
/// the holder's own lease renewal need not), so every write below is the current holder's. The caller commits (after recording SUCCESS in the same transaction) or rolls back;
/// on any error it must roll back, which undoes everything this date wrote.
///
/// Fines are made final as of the later of `date` and the latest date already settled: when a
/// gap is filled behind later SUCCESSes, what those dates would have settled had the gap's loans
/// been known is settled now rather than on the next night. On an ordinary night both are `date`.
///
/// `abort` is checked between batches; a cancelled token gives [`SettleError::Abandoned`].
pub async fn settle_date(
    tx: &mut PgConnection,
    ctx: &RunContext,
    date: NaiveDate,
    abort: &CancellationToken,
) -> Result<DateCounts, SettleError> {
    fence::guard(tx, &ctx.task_name, ctx.fencing_token).await?;
    // Checked when the record started (`records::start`); again here, in the transaction that
    // settles, so that only a database clock going backwards could get past both.
    let today = business_date(store::clock::current(&mut *tx).await?, ctx.business_tz);
    if date >= today {
        return Err(SettleError::NotEnded { date, today });
    }
    // The later of `date` and the latest settled date: what the rest of the database already
    // reflects. Equal to `date` on an ordinary night; later when a gap is being filled.
    let latest = store::executions::last_success(&mut *tx, &ctx.task_name).await?;
    let as_of = latest.map_or(date, |latest| latest.max(date));

    let started = Instant::now();
    let accrued = accrue::accrue(tx, ctx, date, abort).await? + changes::accrue_changes(tx, ctx, as_of, abort).await?;
    let accrue_time = started.elapsed();

    let started = Instant::now();
    let settled = settle::settle(tx, ctx, as_of, abort).await?;
    let settle_time = started.elapsed();

    Ok(DateCounts {
        accrued,
        settled: settled.settled,
        voided: settled.voided,
        charged: settled.charged,
        accrue_time,
        settle_time,
    })
}

/// Accrues and settles the loans recorded or changed since their last accrual, as of the latest
/// settled date, in the open transaction `tx`: the work of a run that finds every date settled
/// but loans queued (an import after last night's run). `None` when no date was ever settled;
/// the first date will take the queue.
///
/// Fenced like a date; no execution record, since no business date is settled (the attempt
/// timeline records the run).
pub async fn settle_changes(
    tx: &mut PgConnection,
    ctx: &RunContext,
    abort: &CancellationToken,
) -> Result<Option<DateCounts>, SettleError> {
    fence::guard(tx, &ctx.task_name, ctx.fencing_token).await?;
    let Some(as_of) = store::executions::last_success(&mut *tx, &ctx.task_name).await? else {
        return Ok(None);
    };
    let started = Instant::now();
    let accrued = changes::accrue_changes(tx, ctx, as_of, abort).await?;
    let accrue_time = started.elapsed();
    let started = Instant::now();
    let settled = settle::settle(tx, ctx, as_of, abort).await?;
    Ok(Some(DateCounts {
        accrued,
        settled: settled.settled,
        voided: settled.voided,
        charged: settled.charged,
        accrue_time,
        settle_time: started.elapsed(),
    }))
}

//! The work of one business date, inside the caller's transaction: fence, accrue, settle.

use std::time::Instant;

use chrono::NaiveDate;
use sqlx::PgConnection;
use tokio_util::sync::CancellationToken;

use super::{DateCounts, RunContext, SettleError, accrue, settle};
use crate::lock::fence;

/// Accrues and settles business date `date` in the open transaction `tx` (`&mut *tx`).
///
/// The first statement is the fence guard: with a stale token nothing is written and the caller
/// gets [`SettleError::Fenced`]. Past the guard the token stays current until the transaction
/// ends (the guard holds a share lock on the lock row), so every write below is the current
/// holder's. The caller commits (after recording SUCCESS in the same transaction) or rolls back;
/// on any error it must roll back, which undoes everything this date wrote.
///
/// `abort` is checked between batches; a cancelled token gives [`SettleError::Abandoned`].
pub async fn settle_date(
    tx: &mut PgConnection,
    ctx: &RunContext,
    date: NaiveDate,
    abort: &CancellationToken,
) -> Result<DateCounts, SettleError> {
    fence::guard(tx, &ctx.task_name, ctx.fencing_token).await?;

    let started = Instant::now();
    let accrued = accrue::accrue(tx, ctx, date, abort).await?;
    let accrue_time = started.elapsed();

    let started = Instant::now();
    let settled = settle::settle(tx, ctx, date, abort).await?;
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

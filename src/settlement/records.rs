//! Execution records as the settlement writes them: every write fenced like the settlement's own.
//!
//! A date's record lives through three transactions:
//! 1. [`start`]: a small fenced transaction inserts it RUNNING and commits at once, so other
//!    replicas and operators see that the date is being worked on (and the TIMEOUT alert can see
//!    a run that hangs);
//! 2. [`succeed`]: inside the date's own transaction, so the SUCCESS commits with the date's
//!    writes or not at all;
//! 3. on failure, [`fail`] in its own fenced transaction (the date's was rolled back).
//!
//! If the fence refuses [`fail`], the lock has passed to another holder; that holder calls
//! [`abandon_stale`] right after winning, which closes every RUNNING record of older tokens.
//! If [`fail`] itself fails (the database went away with the date's transaction),
//! [`fail_in_background`] keeps trying until the database answers again. Either way no record
//! stays RUNNING for good, nor for long.

use std::collections::HashSet;
use std::time::Duration;

use chrono::NaiveDate;
use sqlx::{PgConnection, PgPool};
use tokio::task::JoinHandle;

use super::RunContext;
use crate::backoff::Backoff;
use crate::domain::{FencingToken, TaskName, business_date};
use crate::lock::{FenceError, fence};
use crate::store;
use crate::store::executions::{self, NewExecution};

pub use crate::domain::execution::{ParseTriggerError, Trigger};
pub use crate::store::executions::{Execution, find, last_success, list};

/// The answer of [`start`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartOutcome {
    /// A new RUNNING execution.
    Running { execution_id: i64 },
    /// The date already has a SUCCESS (this execution); there is nothing to run. At most one
    /// SUCCESS per date is the contract, and a settled date would change nothing anyway.
    AlreadySettled { execution_id: i64 },
    /// The date has not ended by the database's clock (`today` in the business zone): nothing
    /// was recorded, and the date is settled once it has ended.
    NotEnded { today: NaiveDate },
}

/// Records that this run starts `date`: a RUNNING execution, in its own fenced transaction.
///
/// No date is settled before it has ended by the database's clock, whatever planned it: the
/// check is here, after the fence, against the database's clock at this moment, so neither a
/// replica's wrong clock nor a plan made before a clock jump can start a date early.
pub async fn start(pool: &PgPool, ctx: &RunContext, date: NaiveDate) -> Result<StartOutcome, FenceError> {
    let mut tx = fence::begin(pool).await?;
    fence::guard(&mut tx, &ctx.task_name, ctx.fencing_token).await?;
    let today = business_date(store::clock::current(&mut *tx).await?, ctx.business_tz);
    if date >= today {
        return Ok(StartOutcome::NotEnded { today });
    }
    let new = NewExecution {
        task_name: &ctx.task_name,
        business_date: date,
        trigger: ctx.trigger,
        instance_id: &ctx.instance_id,
        fencing_token: ctx.fencing_token,
    };
    let started = match executions::insert_running(&mut tx, &new).await? {
        Some(execution_id) => StartOutcome::Running { execution_id },
        None => {
            let execution_id = executions::find_success(&mut *tx, &ctx.task_name, date)
                .await?
                .ok_or(sqlx::Error::RowNotFound)?;
            StartOutcome::AlreadySettled { execution_id }
        }
    };
    tx.commit().await?;
    Ok(started)
}

/// Marks the execution SUCCESS inside the date's transaction `tx`. `false` when it is no longer
/// RUNNING; the caller must then roll the date back.
///
/// A second SUCCESS for the same date violates `task_execution_one_success` and fails the date's
/// transaction: the database has the last word on "at most once".
pub async fn succeed(tx: &mut PgConnection, execution_id: i64, affected_rows: i64) -> sqlx::Result<bool> {
    executions::mark_success(tx, execution_id, affected_rows).await
}

/// Marks the execution FAILED with `error`, in its own fenced transaction.
///
/// `Ok(false)` when the fence refused (the new holder's [`abandon_stale`] closes the record) or
/// the record was no longer RUNNING.
pub async fn fail(pool: &PgPool, ctx: &RunContext, execution_id: i64, error: &str) -> sqlx::Result<bool> {
    let mut tx = fence::begin(pool).await?;
    match fence::guard(&mut tx, &ctx.task_name, ctx.fencing_token).await {
        Ok(()) => {}
        Err(FenceError::Fenced(_)) => return Ok(false),
        Err(FenceError::Db(e)) => return Err(e),
    }
    let failed = executions::mark_failed(&mut tx, execution_id, error).await?;
    tx.commit().await?;
    Ok(failed)
}

/// The waits of [`fail_in_background`]: from 250 ms doubling to 5 s.
const CLOSE_RETRY: Backoff = Backoff::new(Duration::from_millis(250), Duration::from_secs(5));

/// [`fail`], tried again in the background until the database answers: for a record whose
/// FAILED write failed (the database went away with the date's transaction), so that it does not
/// stay RUNNING until the next acquisition (a day, with the nightly cron).
///
/// Tries with a backoff from 250 ms doubling to 5 s, and ends once the write is answered: done,
/// or refused because the lock passed on (the new holder's [`abandon_stale`] closes the record)
/// or the record is no longer RUNNING. Also ends when the pool is closed, at shutdown, and with
/// the process. The task answers whether this process closed the record.
pub fn fail_in_background(pool: PgPool, ctx: RunContext, execution_id: i64, error: String) -> JoinHandle<bool> {
    tokio::spawn(async move {
        let mut waits = CLOSE_RETRY.waits();
        loop {
            tokio::time::sleep(waits.next().unwrap_or(CLOSE_RETRY.max)).await;
            match fail(&pool, &ctx, execution_id, &error).await {
                Ok(closed) => {
                    tracing::info!(
                        job.task_name = %ctx.task_name,
                        lock.fencing_token = ctx.fencing_token.0,
                        execution.id = execution_id,
                        execution.closed = closed,
                        "the database answers again; the failed execution is closed"
                    );
                    return closed;
                }
                Err(sqlx::Error::PoolClosed) => {
                    tracing::warn!(
                        execution.id = execution_id,
                        "shutting down with the execution still RUNNING; the next holder will close it"
                    );
                    return false;
                }
                Err(e) => {
                    tracing::debug!(execution.id = execution_id, error = %e, "execution not closed yet; trying again");
                }
            }
        }
    })
}

/// Marks RUNNING executions of `task_name` started under a token older than `current_token`
/// FAILED with `abandoned: the lock passed to fencing token N`. The new holder calls this right
/// after winning the lock: those runs lost their lease and can no longer commit anything.
///
/// Fenced like every job write. A caller whose token is itself no longer current changes nothing
/// and gets `Ok(0)`: the current holder does the cleanup.
pub async fn abandon_stale(pool: &PgPool, task_name: &TaskName, current_token: FencingToken) -> sqlx::Result<u64> {
    let mut tx = fence::begin(pool).await?;
    match fence::guard(&mut tx, task_name, current_token).await {
        Ok(()) => {}
        Err(FenceError::Fenced(_)) => return Ok(0),
        Err(FenceError::Db(e)) => return Err(e),
    }
    let abandoned = executions::abandon_older(&mut tx, task_name, current_token).await?;
    tx.commit().await?;
    if abandoned > 0 {
        tracing::warn!(
            job.task_name = %task_name,
            lock.fencing_token = current_token.0,
            job.executions = abandoned,
            "executions of an earlier holder abandoned"
        );
    }
    Ok(abandoned)
}

/// Which of `dates` already have a SUCCESS (a manual run or backfill skips them).
pub async fn settled_among(
    pool: &PgPool,
    task_name: &TaskName,
    dates: &[NaiveDate],
) -> sqlx::Result<HashSet<NaiveDate>> {
    executions::settled_among(pool, task_name, dates).await
}

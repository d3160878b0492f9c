//! The settlement procedure (CONTRACT §2.3 to §2.5): what one run does with the lock it holds.
//!
//! The job (`crate::jobs`) takes the lock and plans the dates (its planner: every date from the
//! start date through the target that has no SUCCESS, oldest first, capped; gaps behind later
//! SUCCESSes included), then hands this module a [`RunContext`] (who is running, with which
//! fencing token) and those dates. [`settle_dates`] walks them oldest first. Each date gets an
//! execution record ([`records`]) and is settled by [`settle_date`] in ONE transaction that also
//! marks the record SUCCESS. The first date that fails stops the walk; the later ones wait for
//! the next run, which starts again from the first date without SUCCESS.
//!
//! # One transaction per business date
//!
//! For a date `D` the transaction is: the fence guard (first statement), accrue the month of `D`
//! ([`accrue`]), accrue the loans recorded or changed since their last accrual ([`changes`]),
//! settle ([`settle`]), mark the execution SUCCESS, commit. So a date is either wholly done and
//! recorded SUCCESS, or not done at all: a failure inside a date (a refused statement, a lost
//! connection, a fencing refusal, a shutdown that cannot wait) rolls back every write of that
//! date, and the next run simply does the date again. Nothing is ever half-settled, and no
//! compensation logic is needed.
//!
//! Within that transaction the work is still cut into bounded batches (`batch_size` rows per
//! statement): each statement stays short and plannable, memory stays flat, and a stop request is
//! noticed between batches instead of after the whole date.
//!
//! # Why reruns and out-of-order runs converge
//!
//! Every value written is a pure function of the loan and the date, and every write is
//! conditioned on the row's state:
//! - accrual writes a fine's amount as of `accrued_through = min(D, month end, returned_on)` and
//!   only moves `accrued_through` forward, and never touches a SETTLED or VOID fine;
//! - a loan recorded or changed late is accrued for every month from the start month on, as of
//!   the later of `D` and the latest settled date, so its fines do not depend on when it was
//!   recorded ([`changes`]);
//! - settlement recomputes the fine's *final* amount from the loan (so a skipped date or a
//!   back-dated return cannot leave a stale amount), only moves PENDING fines, and posts the
//!   CHARGE with `on conflict do nothing` on the unique `(fine_id, kind)` index.
//!
//! Running a date twice therefore changes nothing the second time, and running the dates of a
//! contiguous range in any order leaves the same rows as running them once in order (the tests
//! in `tests/it/settlement` check both against an independent day-by-day oracle).
//!
//! # Query plans
//!
//! The two batch statements ([`accrue`], [`settle`]) are sent as unnamed statements, so that
//! Postgres plans each batch with its own values. A named (cached) statement may switch to one
//! generic plan after five runs, which would scan the whole loan table on a day with few overdue
//! loans as it does on a day with many. They are therefore written with `sqlx::query_as` (the
//! compile-time macros always name their statements) and checked by the tests instead.
//!
//! `plan_cache_mode = force_custom_plan` would do the same for the macros, but it applies to
//! every cached plan of the session, including the ones of the foreign-key triggers, which then
//! re-plan their lookup for every row: it made the whole date twice as slow.

pub mod accrue;
mod batches;
pub mod changes;
mod date;
pub mod records;
pub mod settle;
mod walk;

use std::time::Duration;

use chrono::NaiveDate;
use chrono_tz::Tz;

use crate::domain::{FencingToken, TaskName};
use crate::lock::{FenceError, Fenced};
use crate::store::failure::Conflict;
use crate::store::session::StatementLimits;

pub use date::settle_date;
pub use records::Trigger;
pub use walk::{DateOutcome, DateStatus, WalkObserver, WalkReport, settle_changes, settle_dates};

/// Who is running, with which lease: every write of the run carries `fencing_token` and is
/// refused by the database once that token is no longer the task's current one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunContext {
    /// The job's task name (`settle-fines`): the key of its lock and its execution records.
    pub task_name: TaskName,
    /// The token of the lease this run holds.
    pub fencing_token: FencingToken,
    /// This replica, for people reading the execution records.
    pub instance_id: String,
    pub trigger: Trigger,
    /// The job's start date (`crate::jobs::plan::Planner::start_date`): no month before its month is
    /// ever accrued.
    pub start_date: NaiveDate,
    /// The business zone: a date is settled only once it has ended there by the database's
    /// clock.
    pub business_tz: Tz,
    /// Rows per statement in the accrue and settle steps (`FINESETTLE_SETTLE_BATCH_SIZE`).
    pub batch_size: i64,
    /// The limits of each statement of a date's transaction (`FINESETTLE_JOB_STATEMENT_TIMEOUT`,
    /// `FINESETTLE_JOB_LOCK_TIMEOUT`).
    pub statement_limits: StatementLimits,
}

/// What one business date wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DateCounts {
    /// Fines inserted or moved forward by the accrual (of the month of the date, and of the
    /// loans recorded or changed since their last accrual).
    pub accrued: i64,
    /// PENDING fines that became SETTLED.
    pub settled: i64,
    /// PENDING fines that became VOID (no overdue day left after a back-dated return).
    pub voided: i64,
    /// CHARGE entries posted. Fewer than `settled` only for zero-amount fines (a loan with a
    /// daily fine of 0): the ledger accepts no zero CHARGE, and such a fine owes nothing.
    pub charged: i64,
    /// Time spent in the accrue step.
    pub accrue_time: Duration,
    /// Time spent in the settle step.
    pub settle_time: Duration,
}

impl DateCounts {
    /// The execution record's `affected_rows`: fines accrued plus fines made final.
    pub fn affected_rows(&self) -> i64 {
        self.accrued + self.settled + self.voided
    }
}

/// Why a business date did not complete. Its transaction was rolled back in every case.
#[derive(Debug, thiserror::Error)]
pub enum SettleError {
    /// The run's fencing token is no longer current: another holder took the lock over.
    #[error(transparent)]
    Fenced(#[from] Fenced),
    /// The run was asked to stop (lease lost, shutdown grace over) before the date finished.
    #[error("abandoned: the run was stopped before the date finished (lease lost or shutdown)")]
    Abandoned,
    /// The date has not ended by the database's clock.
    #[error("{date} has not ended by the database's clock (today is {today})")]
    NotEnded { date: NaiveDate, today: NaiveDate },
    /// The execution record was no longer RUNNING when the date was about to commit.
    #[error("execution {0} is no longer RUNNING; the date was rolled back")]
    RecordGone(i64),
    #[error(transparent)]
    Db(#[from] sqlx::Error),
}

/// A date whose transaction lost a race runs again ([`crate::store::failure::Retries`]).
impl Conflict for SettleError {
    fn is_conflict(&self) -> bool {
        matches!(self, SettleError::Db(error) if error.is_conflict())
    }
}

impl From<FenceError> for SettleError {
    fn from(e: FenceError) -> Self {
        match e {
            FenceError::Fenced(f) => SettleError::Fenced(f),
            FenceError::Db(e) => SettleError::Db(e),
        }
    }
}

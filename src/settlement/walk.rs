//! The backfill walk: the business dates of one run, oldest first, each its own unit.

use std::time::{Duration, Instant};

use chrono::NaiveDate;
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;

use super::records::{self, StartOutcome};
use super::{DateCounts, RunContext, SettleError, date, settle_date};
use crate::lock::{FenceError, fence};
use crate::store::failure::Retries;

/// How one date of a walk ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr)]
#[strum(serialize_all = "SCREAMING_SNAKE_CASE")]
pub enum DateStatus {
    /// Settled and recorded SUCCESS.
    Success,
    /// Already had a SUCCESS; not run again.
    AlreadySettled,
    /// Failed and rolled back; recorded FAILED with the error. The walk stopped here.
    Failed,
    /// The fencing token is no longer current: nothing was written and the walk stopped. The
    /// record (if one was started) is closed by the new holder.
    Fenced,
    /// Stopped mid-date (lease lost, shutdown grace over): rolled back, recorded FAILED.
    Abandoned,
    /// Not started: the date has not ended by the database's clock. Nothing was recorded, and
    /// the walk stopped here (the later dates have not ended either).
    NotEnded,
}

impl DateStatus {
    /// The spelling the CLI, logs and metrics use.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// One date of a walk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DateOutcome {
    pub date: NaiveDate,
    /// The execution record; `None` when none could be started (fenced, database down).
    pub execution_id: Option<i64>,
    pub status: DateStatus,
    /// The execution's `affected_rows` (0 unless SUCCESS).
    pub rows: i64,
    /// What the date wrote, when it succeeded.
    pub counts: Option<DateCounts>,
    pub duration: Duration,
    /// The error recorded, for FAILED, FENCED and ABANDONED.
    pub error: Option<String>,
}

/// What a walk did, date by date, and what it left for the next run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WalkReport {
    /// The dates the walk reached, oldest first.
    pub outcomes: Vec<DateOutcome>,
    /// Dates not reached because the walk stopped first (a failure, fencing, a stop request).
    pub not_run: Vec<NaiveDate>,
}

impl WalkReport {
    /// Dates settled by this walk.
    pub fn succeeded(&self) -> usize {
        self.outcomes.iter().filter(|o| o.status == DateStatus::Success).count()
    }

    /// The date that stopped the walk (failed, fenced or abandoned), if any.
    pub fn stopped_at(&self) -> Option<&DateOutcome> {
        self.outcomes.last().filter(|o| {
            matches!(
                o.status,
                DateStatus::Failed | DateStatus::Fenced | DateStatus::Abandoned | DateStatus::NotEnded
            )
        })
    }

    /// Whether the fence refused this run: another holder has the lock.
    pub fn fenced(&self) -> bool {
        self.outcomes.iter().any(|o| o.status == DateStatus::Fenced)
    }

    /// Whether every date was settled (now or before).
    pub fn completed(&self) -> bool {
        self.not_run.is_empty()
            && self
                .outcomes
                .iter()
                .all(|o| matches!(o.status, DateStatus::Success | DateStatus::AlreadySettled))
    }

    /// Rows written by the whole walk.
    pub fn rows(&self) -> i64 {
        self.outcomes.iter().map(|o| o.rows).sum()
    }
}

/// Told of each date of a walk as it goes: the CLI's progress bar, a manual run answering with
/// the execution it started. Both methods do nothing unless implemented; `()` observes nothing.
pub trait WalkObserver: Send {
    /// The date has an execution record: RUNNING, or the SUCCESS found for it.
    fn started(&mut self, _date: NaiveDate, _execution_id: i64) {}
    /// The date is over, whatever its outcome.
    fn finished(&mut self, _outcome: &DateOutcome) {}
}

impl WalkObserver for () {}

/// A closure observes the dates as they finish.
impl<F: FnMut(&DateOutcome) + Send> WalkObserver for F {
    fn finished(&mut self, outcome: &DateOutcome) {
        self(outcome)
    }
}

/// Settles `dates` oldest first, each in its own transaction with its own execution record,
/// telling `observer` as it goes.
///
/// - `stop` (shutdown): checked between dates; the current date finishes.
/// - `abort` (lease lost, shutdown grace over): checked between dates and between batches; the
///   current date is rolled back and recorded FAILED `abandoned: ...`.
///
/// The first date that fails stops the walk: later dates build on it (a month's fines are
/// settled on a later date), and the next run starts again from the first date without SUCCESS.
/// Never returns an error: every outcome is in the report (and in the records and the log).
pub async fn settle_dates(
    pool: &PgPool,
    ctx: &RunContext,
    dates: &[NaiveDate],
    stop: &CancellationToken,
    abort: &CancellationToken,
    mut observer: impl WalkObserver,
) -> WalkReport {
    let mut dates = dates.to_vec();
    dates.sort_unstable();
    dates.dedup();
    let mut report = WalkReport::default();
    for (i, &date) in dates.iter().enumerate() {
        if stop.is_cancelled() || abort.is_cancelled() {
            report.not_run = dates[i..].to_vec();
            tracing::info!(
                job.task_name = %ctx.task_name,
                job.dates = report.not_run.len(),
                "walk stopped before its remaining dates"
            );
            break;
        }
        // One span per business date, inside the fire's span: exported as an OpenTelemetry span.
        let span = tracing::info_span!("job.date", job.business_date = %date, lock.fencing_token = ctx.fencing_token.0);
        let outcome = tracing::Instrument::instrument(run_one(pool, ctx, date, abort, &mut observer), span).await;
        observer.finished(&outcome);
        let stops = !matches!(outcome.status, DateStatus::Success | DateStatus::AlreadySettled);
        report.outcomes.push(outcome);
        if stops {
            report.not_run = dates[i + 1..].to_vec();
            break;
        }
    }
    report
}

/// Starts the record, runs the date, records the end, logs it.
async fn run_one(
    pool: &PgPool,
    ctx: &RunContext,
    date: NaiveDate,
    abort: &CancellationToken,
    observer: &mut impl WalkObserver,
) -> DateOutcome {
    let started = Instant::now();
    let mut outcome = DateOutcome {
        date,
        execution_id: None,
        status: DateStatus::Failed,
        rows: 0,
        counts: None,
        duration: Duration::ZERO,
        error: None,
    };
    let execution_id = match records::start(pool, ctx, date).await {
        Ok(StartOutcome::Running { execution_id }) => execution_id,
        Ok(StartOutcome::AlreadySettled { execution_id }) => {
            observer.started(date, execution_id);
            outcome.execution_id = Some(execution_id);
            outcome.status = DateStatus::AlreadySettled;
            outcome.duration = started.elapsed();
            log(ctx, &outcome);
            return outcome;
        }
        Ok(StartOutcome::NotEnded { today }) => {
            outcome.status = DateStatus::NotEnded;
            outcome.error = Some(format!(
                "{date} has not ended by the database's clock (today is {today} in {})",
                ctx.business_tz
            ));
            outcome.duration = started.elapsed();
            log(ctx, &outcome);
            return outcome;
        }
        Err(error) => {
            outcome.status = match error {
                FenceError::Fenced(_) => DateStatus::Fenced,
                FenceError::Db(_) => DateStatus::Failed,
            };
            outcome.error = Some(error.to_string());
            outcome.duration = started.elapsed();
            log(ctx, &outcome);
            return outcome;
        }
    };
    observer.started(date, execution_id);
    outcome.execution_id = Some(execution_id);
    let mut retries = Retries::default();
    let settled = loop {
        // A date's transaction that lost a race (a deadlock, a serialization failure under a
        // stricter isolation) rolled back whole: it runs again before the date counts as failed.
        match run_date(pool, ctx, date, execution_id, abort).await {
            Err(error) if retries.again(&error).await => continue,
            settled => break settled,
        }
    };
    match settled {
        Ok(counts) => {
            outcome.status = DateStatus::Success;
            outcome.rows = counts.affected_rows();
            outcome.counts = Some(counts);
        }
        Err(error) => {
            outcome.status = match error {
                SettleError::Fenced(_) => DateStatus::Fenced,
                SettleError::Abandoned => DateStatus::Abandoned,
                SettleError::NotEnded { .. } | SettleError::RecordGone(_) | SettleError::Db(_) => DateStatus::Failed,
            };
            let text = error.to_string();
            // The date's transaction is rolled back; now close its record. A fenced run's record
            // is refused here too and left to the new holder (`records::abandon_stale`). When the
            // database cannot take the write now, it is written as soon as it answers again.
            match records::fail(pool, ctx, execution_id, &text).await {
                Ok(_) => {}
                Err(record_error) => {
                    tracing::warn!(
                        execution.id = execution_id,
                        error = %record_error,
                        "could not record the failure; trying again until the database answers"
                    );
                    records::fail_in_background(pool.clone(), ctx.clone(), execution_id, text.clone());
                }
            }
            outcome.error = Some(text);
        }
    }
    outcome.duration = started.elapsed();
    log(ctx, &outcome);
    outcome
}

/// One transaction: the date's writes and its SUCCESS commit together, or nothing does.
async fn run_date(
    pool: &PgPool,
    ctx: &RunContext,
    date: NaiveDate,
    execution_id: i64,
    abort: &CancellationToken,
) -> Result<DateCounts, SettleError> {
    let mut tx = fence::begin_limited(pool, &ctx.statement_limits).await?;
    let result = async {
        let counts = settle_date(&mut tx, ctx, date, abort).await?;
        if !records::succeed(&mut tx, execution_id, counts.affected_rows()).await? {
            return Err(SettleError::RecordGone(execution_id));
        }
        Ok(counts)
    }
    .await;
    match result {
        Ok(counts) => {
            tx.commit().await?;
            Ok(counts)
        }
        Err(error) => {
            // Explicit, so the locks are gone before the failure is recorded. A rollback that
            // fails (connection lost) is a rollback all the same: the server discards the
            // transaction when the session ends.
            let _ = tx.rollback().await;
            Err(error)
        }
    }
}

/// Accrues and settles the loans recorded or changed since their last accrual, as of the latest
/// settled date, in one fenced transaction ([`date::settle_changes`]). A run calls it when it has
/// no date left to settle, so an import after the last night's run is charged by the next fire,
/// not only by the next business date.
pub async fn settle_changes(
    pool: &PgPool,
    ctx: &RunContext,
    abort: &CancellationToken,
) -> Result<Option<DateCounts>, SettleError> {
    let mut tx = fence::begin_limited(pool, &ctx.statement_limits).await?;
    match date::settle_changes(&mut tx, ctx, abort).await {
        Ok(counts) => {
            tx.commit().await?;
            if let Some(c) = counts {
                tracing::info!(
                    job.task_name = %ctx.task_name,
                    lock.fencing_token = ctx.fencing_token.0,
                    job.accrued = c.accrued,
                    job.settled = c.settled,
                    job.voided = c.voided,
                    job.charged = c.charged,
                    "recorded or changed loans accrued"
                );
            }
            Ok(counts)
        }
        Err(error) => {
            let _ = tx.rollback().await;
            Err(error)
        }
    }
}

fn log(ctx: &RunContext, o: &DateOutcome) {
    let duration_ms = u64::try_from(o.duration.as_millis()).unwrap_or(u64::MAX);
    let error = o.error.as_deref().unwrap_or_default();
    match o.status {
        DateStatus::Success => {
            let c = o.counts.unwrap_or_default();
            tracing::info!(
                job.task_name = %ctx.task_name,
                job.business_date = %o.date,
                job.trigger = ctx.trigger.as_str(),
                lock.fencing_token = ctx.fencing_token.0,
                execution.id = o.execution_id,
                job.rows = o.rows,
                job.accrued = c.accrued,
                job.settled = c.settled,
                job.voided = c.voided,
                job.charged = c.charged,
                duration_ms,
                "business date settled"
            );
        }
        DateStatus::AlreadySettled => tracing::info!(
            job.task_name = %ctx.task_name,
            job.business_date = %o.date,
            execution.id = o.execution_id,
            "business date already settled; skipped"
        ),
        DateStatus::Failed => tracing::error!(
            job.task_name = %ctx.task_name,
            job.business_date = %o.date,
            lock.fencing_token = ctx.fencing_token.0,
            execution.id = o.execution_id,
            error,
            duration_ms,
            "business date failed; rolled back, the next run redoes it"
        ),
        DateStatus::Fenced => tracing::warn!(
            job.task_name = %ctx.task_name,
            job.business_date = %o.date,
            lock.fencing_token = ctx.fencing_token.0,
            execution.id = o.execution_id,
            error,
            "fencing token no longer current; nothing written, run stopped"
        ),
        DateStatus::NotEnded => tracing::warn!(
            job.task_name = %ctx.task_name,
            job.business_date = %o.date,
            lock.fencing_token = ctx.fencing_token.0,
            error,
            "business date not started: it has not ended by the database's clock"
        ),
        DateStatus::Abandoned => tracing::warn!(
            job.task_name = %ctx.task_name,
            job.business_date = %o.date,
            lock.fencing_token = ctx.fencing_token.0,
            execution.id = o.execution_id,
            duration_ms,
            "business date abandoned: rolled back, the next run redoes it"
        ),
    }
}

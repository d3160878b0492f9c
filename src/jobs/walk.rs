//! The walking stage of a fire ([`super::fire`]): the settlement of its dates under the lease
//! keeper, the changed loans after them, the metrics, and the release.

use chrono::{DateTime, NaiveDate, Utc};
use tokio_util::sync::CancellationToken;

use super::SettleJob;
use super::hooks::Walked;
use crate::lock::{Lease, LeaseKeeper};
use crate::settlement::{self, DateStatus, RunContext, WalkObserver, WalkReport};
use crate::store;
use crate::telemetry::metrics;

/// Settles `dates` with `context`, then the loans recorded or changed meanwhile, under the
/// lease `keeper` renews. Between batches the walk stops when the lease is lost or the shutdown
/// grace ran out; between dates also when the service is shutting down.
pub(super) async fn settle(
    job: &SettleJob,
    context: &RunContext,
    dates: &[NaiveDate],
    keeper: &LeaseKeeper,
    observer: impl WalkObserver,
) -> WalkReport {
    let inner = &job.inner;
    let abort = any_of(&[keeper.lost(), inner.abort.clone()]);
    let between_dates = any_of(&[abort.clone(), inner.shutdown.clone()]);
    // Ends the watcher tasks of `any_of` when the walk is over.
    let _watchers = (abort.clone().drop_guard(), between_dates.clone().drop_guard());
    let span = tracing::info_span!(
        "job.fire",
        job.task_name = %context.task_name,
        job.trigger = context.trigger.as_str(),
        lock.fencing_token = context.fencing_token.0
    );
    let report = tracing::Instrument::instrument(
        async {
            let report = settlement::settle_dates(&inner.pool, context, dates, &between_dates, &abort, observer).await;
            if report.completed() && !between_dates.is_cancelled() {
                settle_changes(&inner.pool, context, &abort).await;
            }
            report
        },
        span,
    )
    .await;
    report_metrics(context, &report, inner.time.now());
    report
}

/// Loans recorded or changed while the walk ran (or before a fire with no date to settle) are
/// accrued and settled as of the latest settled date. A failure is logged only: the queue
/// stays, and the next fire takes it.
async fn settle_changes(pool: &sqlx::PgPool, context: &RunContext, abort: &CancellationToken) {
    match store::loans::changes_pending(pool).await {
        Ok(false) => {}
        Ok(true) => {
            if let Err(error) = settlement::settle_changes(pool, context, abort).await {
                tracing::warn!(
                    job.task_name = %context.task_name,
                    lock.fencing_token = context.fencing_token.0,
                    %error,
                    "changed loans not accrued; the next fire retries"
                );
            }
        }
        Err(error) => tracing::warn!(%error, "could not look for changed loans; the next fire retries"),
    }
}

/// One execution metric per date; rows and the last-success gauge (at `now`, by the database's
/// clock) for settled dates.
fn report_metrics(context: &RunContext, report: &WalkReport, now: DateTime<Utc>) {
    let task = &context.task_name;
    for outcome in &report.outcomes {
        // Neither ran: no execution to count.
        if matches!(outcome.status, DateStatus::AlreadySettled | DateStatus::NotEnded) {
            continue;
        }
        let status = if outcome.status == DateStatus::Success {
            "SUCCESS"
        } else {
            "FAILED"
        };
        metrics::job_execution(task, context.trigger.as_str(), status, outcome.duration);
        if let Some(counts) = outcome.counts {
            metrics::rows(task, counts.accrued.unsigned_abs(), counts.settled.unsigned_abs());
        }
    }
    if report.succeeded() > 0 {
        metrics::last_success(task, now.timestamp());
    }
}

/// What the after-walk hooks are told of `report`.
pub(super) fn walked(report: &WalkReport, shutdown: &CancellationToken) -> Walked {
    Walked {
        settled: report
            .outcomes
            .iter()
            .filter(|outcome| outcome.status == DateStatus::Success)
            .map(|outcome| outcome.date)
            .collect(),
        shutdown: shutdown.clone(),
    }
}

/// Owner-checked release honouring lock_at_least_for. A failure is only logged: the lease then
/// simply expires at locked_until.
pub(super) async fn release(job: &SettleJob, lease: &Lease) {
    let inner = &job.inner;
    match inner.lock.release(lease, inner.spec.at_least_for).await {
        Ok(true) => {}
        Ok(false) => tracing::warn!(
            lock.fencing_token = lease.fencing_token.0,
            "lock was no longer ours at release"
        ),
        Err(error) => {
            tracing::warn!(%error, lock.fencing_token = lease.fencing_token.0, "lock release failed; it will expire")
        }
    }
}

/// A token cancelled as soon as any of `tokens` is.
fn any_of(tokens: &[CancellationToken]) -> CancellationToken {
    let combined = CancellationToken::new();
    for token in tokens {
        let (token, combined) = (token.clone(), combined.clone());
        tokio::spawn(async move {
            tokio::select! {
                () = token.cancelled() => combined.cancel(),
                () = combined.cancelled() => {}
            }
        });
    }
    combined
}

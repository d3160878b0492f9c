//! One fire of the job: guard → lock → plan → walk under a renewed lease → release.

use std::time::Instant;

use chrono::{DateTime, NaiveDate, Utc};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::{Plan, SettleJob};
use crate::lock::{Acquired, Lease, LeaseKeeper};
use crate::settlement::{self, DateStatus, RunContext, Trigger, WalkReport};
use crate::store::attempts::{self, AttemptOutcome, NewAttempt};
use crate::telemetry::metrics;

/// Why a fire did not run. Each is recorded in the attempt timeline before it is returned.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Refused {
    #[error("this process is still running the previous fire")]
    Busy,
    #[error("the lock is held by {holder} until {locked_until}")]
    Held {
        holder: String,
        locked_until: DateTime<Utc>,
    },
    #[error("the lock store is unavailable: {0}")]
    Unavailable(String),
    #[error("every date is already settled")]
    NothingToDo,
    #[error("the service is shutting down")]
    ShuttingDown,
}

/// A fire that won the lock and is settling `dates` in the background.
pub struct Started {
    pub fencing_token: i64,
    pub dates: Vec<NaiveDate>,
    /// How many of `dates` are done (settled or stopped), for progress bars.
    pub progress: watch::Receiver<usize>,
    handle: JoinHandle<RunReport>,
}

/// How a fire ended.
#[derive(Debug)]
pub struct RunReport {
    pub fencing_token: i64,
    pub walk: WalkReport,
    /// The lease was lost mid-run (renewal failed, or another holder took over).
    pub lost_lease: bool,
}

impl Started {
    pub async fn wait(self) -> RunReport {
        match self.handle.await {
            Ok(report) => report,
            Err(join_error) => std::panic::resume_unwind(join_error.into_panic()),
        }
    }
}

pub(super) async fn start(
    job: &SettleJob,
    trigger: Trigger,
    fired_at: DateTime<Utc>,
    plan: Plan,
) -> Result<Started, Refused> {
    let inner = &job.inner;
    let attempt = |outcome: AttemptOutcome| Attempt {
        job,
        trigger,
        fired_at,
        outcome,
    };
    if inner.shutdown.is_cancelled() {
        return Err(Refused::ShuttingDown);
    }
    // Within one process the job never overlaps itself: skip and record, don't queue.
    let Ok(guard) = inner.running.clone().try_lock_owned() else {
        attempt(AttemptOutcome::Busy).record(None, None, None).await;
        tracing::warn!(job.task_name = %inner.spec.task_name, job.trigger = trigger.as_str(), "fire skipped: the previous one is still running");
        return Err(Refused::Busy);
    };
    // For explicit dates (an operator's run), a cheap look before taking the lock: when every
    // date is settled already, say so without touching the lock, whose lock_at_least_for would
    // otherwise answer "held" for a minute after the run that settled them. The plan is made
    // again under the lock, which has the last word. Scheduled fires go straight to the lock.
    let precheck = match &plan {
        Plan::Dates(_) => pending_dates(job, &plan).await.map(Some),
        Plan::CatchUp { .. } => Ok(None),
    };
    match precheck {
        Ok(Some(dates)) if dates.is_empty() => {
            attempt(AttemptOutcome::NothingToDo).record(None, None, None).await;
            return Err(Refused::NothingToDo);
        }
        Ok(_) => {}
        Err(error) => {
            let detail = format!("planning failed: {error}");
            attempt(AttemptOutcome::Unavailable)
                .record(None, None, Some(&detail))
                .await;
            return Err(Refused::Unavailable(detail));
        }
    }
    let lease = match inner.lock.try_acquire(&inner.spec).await {
        Ok(Acquired::Won(lease)) => lease,
        Ok(Acquired::Held { holder, locked_until }) => {
            attempt(AttemptOutcome::Held).record(None, Some(&holder), None).await;
            tracing::info!(job.task_name = %inner.spec.task_name, lock.holder = %holder, "lock held by another replica; nothing to do here");
            return Err(Refused::Held { holder, locked_until });
        }
        Err(error) => {
            let detail = error.to_string();
            attempt(AttemptOutcome::Unavailable)
                .record(None, None, Some(&detail))
                .await;
            tracing::warn!(job.task_name = %inner.spec.task_name, error = %detail, "lock store unavailable; fire skipped");
            return Err(Refused::Unavailable(detail));
        }
    };
    let token = lease.fencing_token;

    let dates = match plan_dates(job, &lease, plan).await {
        Ok(dates) => dates,
        Err(error) => {
            let detail = format!("planning failed: {error}");
            attempt(AttemptOutcome::Unavailable)
                .record(Some(token), None, Some(&detail))
                .await;
            release(job, &lease).await;
            return Err(Refused::Unavailable(detail));
        }
    };
    if dates.is_empty() {
        attempt(AttemptOutcome::NothingToDo)
            .record(Some(token), None, None)
            .await;
        release(job, &lease).await;
        return Err(Refused::NothingToDo);
    }
    let detail = format!(
        "settling {} date(s) from {} to {}",
        dates.len(),
        dates[0],
        dates[dates.len() - 1]
    );
    attempt(AttemptOutcome::Won)
        .record(Some(token), None, Some(&detail))
        .await;
    tracing::info!(
        job.task_name = %inner.spec.task_name,
        job.trigger = trigger.as_str(),
        lock.fencing_token = token,
        job.dates = dates.len(),
        "lock won; settling"
    );

    let job = job.clone();
    let walk_dates = dates.clone();
    let (progress_tx, progress) = watch::channel(0);
    let handle = tokio::spawn(async move {
        let _guard = guard;
        walk(&job, trigger, fired_at, lease, walk_dates, progress_tx).await
    });
    Ok(Started {
        fencing_token: token,
        dates,
        progress,
        handle,
    })
}

/// The dates this fire settles, after marking what older holders left RUNNING as abandoned.
async fn plan_dates(job: &SettleJob, lease: &Lease, plan: Plan) -> sqlx::Result<Vec<NaiveDate>> {
    settlement::records::abandon_stale(&job.inner.pool, &job.inner.spec.task_name, lease.fencing_token).await?;
    pending_dates(job, &plan).await
}

/// The dates of `plan` that have no SUCCESS yet, oldest first.
async fn pending_dates(job: &SettleJob, plan: &Plan) -> sqlx::Result<Vec<NaiveDate>> {
    let inner = &job.inner;
    let task = &inner.spec.task_name;
    match plan {
        Plan::CatchUp { target } => {
            settlement::dates_for_run(&inner.pool, task, inner.start_date, *target, inner.backfill_max_days).await
        }
        Plan::Dates(dates) => {
            let settled = settlement::records::settled_among(&inner.pool, task, dates).await?;
            Ok(dates.iter().copied().filter(|d| !settled.contains(d)).collect())
        }
    }
}

async fn walk(
    job: &SettleJob,
    trigger: Trigger,
    fired_at: DateTime<Utc>,
    lease: Lease,
    dates: Vec<NaiveDate>,
    progress: watch::Sender<usize>,
) -> RunReport {
    let inner = &job.inner;
    let started = Instant::now();
    let keeper = LeaseKeeper::start(inner.lock.clone(), lease.clone(), inner.spec.at_most_for);
    // Between batches the walk stops when the lease is lost or the shutdown grace ran out;
    // between dates also when the service is shutting down.
    let abort = any_of(&[keeper.lost(), inner.abort.clone()]);
    let between_dates = any_of(&[abort.clone(), inner.shutdown.clone()]);
    // Ends the watcher tasks of `any_of` when the walk is over.
    let _watchers = (abort.clone().drop_guard(), between_dates.clone().drop_guard());
    let context = RunContext {
        task_name: inner.spec.task_name.clone(),
        fencing_token: lease.fencing_token,
        instance_id: inner.spec.instance_id.clone(),
        trigger,
        batch_size: inner.batch_size,
    };
    let span = tracing::info_span!(
        "job.fire",
        job.task_name = %context.task_name,
        job.trigger = trigger.as_str(),
        lock.fencing_token = context.fencing_token
    );
    let report = tracing::Instrument::instrument(
        settlement::settle_dates_observed(&inner.pool, &context, &dates, &between_dates, &abort, |_| {
            progress.send_modify(|done| *done += 1);
        }),
        span,
    )
    .await;
    report_metrics(&context, &report);
    let lost_lease = keeper.lost().is_cancelled();
    let lease = keeper.stop().await;
    if lost_lease {
        Attempt {
            job,
            trigger,
            fired_at,
            outcome: AttemptOutcome::LostLease,
        }
        .record(
            Some(lease.fencing_token),
            None,
            Some("the lease was lost; the run stopped"),
        )
        .await;
        tracing::warn!(job.task_name = %context.task_name, lock.fencing_token = lease.fencing_token, "lease lost; run stopped");
    } else {
        release(job, &lease).await;
    }
    tracing::info!(
        job.task_name = %context.task_name,
        lock.fencing_token = lease.fencing_token,
        job.dates_settled = report.succeeded(),
        duration_ms = started.elapsed().as_millis() as u64,
        "fire finished"
    );
    RunReport {
        fencing_token: lease.fencing_token,
        walk: report,
        lost_lease,
    }
}

/// One execution metric per date; rows and the last-success gauge for settled dates.
fn report_metrics(context: &RunContext, report: &WalkReport) {
    let task = &context.task_name;
    for outcome in &report.outcomes {
        let status = if outcome.status == DateStatus::Success {
            "SUCCESS"
        } else {
            "FAILED"
        };
        if outcome.status == DateStatus::AlreadySettled {
            continue;
        }
        metrics::job_execution(task, context.trigger.as_str(), status, outcome.duration);
        if let Some(counts) = outcome.counts {
            metrics::rows(task, counts.accrued.unsigned_abs(), counts.settled.unsigned_abs());
        }
    }
    if report.succeeded() > 0 {
        metrics::last_success(task, Utc::now().timestamp());
    }
}

/// Owner-checked release honouring lock_at_least_for. A failure is only logged: the lease then
/// simply expires at locked_until.
async fn release(job: &SettleJob, lease: &Lease) {
    let inner = &job.inner;
    match inner.lock.release(lease, inner.spec.at_least_for).await {
        Ok(true) => {}
        Ok(false) => tracing::warn!(
            lock.fencing_token = lease.fencing_token,
            "lock was no longer ours at release"
        ),
        Err(error) => {
            tracing::warn!(%error, lock.fencing_token = lease.fencing_token, "lock release failed; it will expire")
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

struct Attempt<'a> {
    job: &'a SettleJob,
    trigger: Trigger,
    fired_at: DateTime<Utc>,
    outcome: AttemptOutcome,
}

impl Attempt<'_> {
    /// Records the attempt. Best effort: the timeline must never stop a fire (and when the
    /// database is down, the attempt cannot be recorded anyway; the log line remains).
    async fn record(&self, fencing_token: Option<i64>, holder: Option<&str>, detail: Option<&str>) {
        let inner = &self.job.inner;
        let attempt = NewAttempt {
            task_name: &inner.spec.task_name,
            trigger: self.trigger.as_str(),
            instance_id: &inner.spec.instance_id,
            fired_at: self.fired_at,
            outcome: self.outcome,
            fencing_token,
            holder,
            detail,
        };
        metrics::lock_attempt(&inner.spec.task_name, self.outcome.as_str());
        if let Err(error) = attempts::record(&inner.pool, &attempt).await {
            tracing::warn!(%error, attempt.outcome = self.outcome.as_str(), "could not record the attempt");
        }
    }
}

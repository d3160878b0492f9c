//! One fire of the job: guard → lock → plan → walk under a renewed lease → release.

use std::time::Instant;

use chrono::{DateTime, NaiveDate, Utc};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::{Plan, SettleJob};
use crate::domain::BeforeStart;
use crate::lock::{Acquired, Lease, LeaseKeeper};
use crate::settlement::{self, DateStatus, PlanError, RunContext, Trigger, WalkReport};
use crate::store;
use crate::store::attempts::{self, AttemptOutcome, NewAttempt};
use crate::telemetry::metrics;

/// Why a fire did not run. Each is recorded in the attempt timeline before it is returned.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Refused {
    /// This process is running a fire already; what that fire is doing.
    #[error("{0}")]
    Busy(Activity),
    #[error("the lock is held by {holder} until {locked_until}")]
    Held {
        holder: String,
        locked_until: DateTime<Utc>,
    },
    #[error("the lock store is unavailable: {0}")]
    Unavailable(String),
    #[error("every date is already settled")]
    NothingToDo,
    /// An operator asked for a date before the job's start date.
    #[error(transparent)]
    BeforeStart(#[from] BeforeStart),
    #[error("the service is shutting down")]
    ShuttingDown,
}

/// What this process's fire is doing, told to a fire or an operator that finds it running.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Activity {
    /// Taking the lock and planning: a moment, or up to the lock's row wait when a takeover
    /// waits for the previous holder's open transaction to end.
    Starting { trigger: Trigger },
    /// Won the lock and walking its dates.
    Walking {
        trigger: Trigger,
        fencing_token: i64,
        dates: Vec<NaiveDate>,
    },
}

impl std::fmt::Display for Activity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Activity::Starting { trigger } => write!(
                f,
                "this replica's {trigger} fire is taking the job's lock; try again in a few seconds"
            ),
            Activity::Walking {
                trigger,
                fencing_token,
                dates,
            } => match (dates.first(), dates.last()) {
                (Some(first), Some(last)) => write!(
                    f,
                    "this replica's {trigger} fire is settling {} date(s) from {first} to {last} \
                     (fencing token {fencing_token})",
                    dates.len()
                ),
                _ => write!(
                    f,
                    "this replica's {trigger} fire is accruing changed loans (fencing token {fencing_token})"
                ),
            },
        }
    }
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
        let activity = job.activity();
        let detail = activity.to_string();
        attempt(AttemptOutcome::Busy).record(None, None, Some(&detail)).await;
        tracing::warn!(job.task_name = %inner.spec.task_name, job.trigger = trigger.as_str(), running = %detail, "fire skipped: the previous one is still running");
        return Err(Refused::Busy(activity));
    };
    job.set_activity(Activity::Starting { trigger });
    // Shutdown may have begun while this fire reached the guard (a retry waking up, say).
    if inner.shutdown.is_cancelled() {
        return Err(Refused::ShuttingDown);
    }
    // For explicit dates (an operator's run), a cheap look before taking the lock: when every
    // date is settled already, say so without touching the lock, whose lock_at_least_for would
    // otherwise answer "held" for a minute after the run that settled them. The plan is made
    // again under the lock, which has the last word. Scheduled fires go straight to the lock.
    let precheck = match &plan {
        Plan::Dates(_) => pending_work(job, &plan).await.map(Some),
        Plan::CatchUp { .. } => Ok(None),
    };
    match precheck {
        Ok(Some(work)) if work.is_empty() => {
            attempt(AttemptOutcome::NothingToDo)
                .record(None, None, work.not_ended.as_deref())
                .await;
            return Err(Refused::NothingToDo);
        }
        Ok(_) => {}
        Err(PlanError::BeforeStart(before)) => {
            let detail = before.to_string();
            attempt(AttemptOutcome::NothingToDo)
                .record(None, None, Some(&detail))
                .await;
            return Err(Refused::BeforeStart(before));
        }
        Err(PlanError::Db(error)) => {
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
        // Whatever kept the store from answering (Redis, the database, a timeout, a corrupt value,
        // the configuration), the fire did not learn whether it may run: refused as unavailable,
        // with the cause's message as the attempt's detail.
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

    let work = match plan_work(job, &lease, &plan).await {
        Ok(work) => work,
        Err(error) => {
            let refused = match error {
                PlanError::BeforeStart(before) => Refused::BeforeStart(before),
                PlanError::Db(error) => Refused::Unavailable(format!("planning failed: {error}")),
            };
            let detail = refused.to_string();
            attempt(AttemptOutcome::Unavailable)
                .record(Some(token), None, Some(&detail))
                .await;
            release(job, &lease).await;
            return Err(refused);
        }
    };
    if work.is_empty() {
        attempt(AttemptOutcome::NothingToDo)
            .record(Some(token), None, work.not_ended.as_deref())
            .await;
        release(job, &lease).await;
        return Err(Refused::NothingToDo);
    }
    let detail = work.describe();
    job.set_activity(Activity::Walking {
        trigger,
        fencing_token: token,
        dates: work.dates.clone(),
    });
    attempt(AttemptOutcome::Won)
        .record(Some(token), None, Some(&detail))
        .await;
    tracing::info!(
        job.task_name = %inner.spec.task_name,
        job.trigger = trigger.as_str(),
        lock.fencing_token = token,
        job.dates = work.dates.len(),
        job.changes_pending = work.changes_pending,
        "lock won; settling"
    );
    let Work { start_date, dates, .. } = work;

    let job = job.clone();
    let walk_dates = dates.clone();
    let (progress_tx, progress) = watch::channel(0);
    let handle = tokio::spawn(async move {
        let _guard = guard;
        walk(&job, trigger, fired_at, lease, start_date, walk_dates, progress_tx).await
    });
    Ok(Started {
        fencing_token: token,
        dates,
        progress,
        handle,
    })
}

/// What a fire has to do: business dates to settle, and whether loans recorded or changed since
/// their last accrual wait (an import after the last run).
struct Work {
    start_date: NaiveDate,
    dates: Vec<NaiveDate>,
    changes_pending: bool,
    /// Why asked-for dates were left out: they have not ended by the database's clock.
    not_ended: Option<String>,
}

impl Work {
    fn is_empty(&self) -> bool {
        self.dates.is_empty() && !self.changes_pending
    }

    /// The attempt timeline's detail for a won fire.
    fn describe(&self) -> String {
        let work = match (self.dates.first(), self.dates.last()) {
            (Some(first), Some(last)) => format!("settling {} date(s) from {first} to {last}", self.dates.len()),
            _ => "accruing loans recorded or changed since the last run".to_owned(),
        };
        match &self.not_ended {
            Some(not_ended) => format!("{work}; {not_ended}"),
            None => work,
        }
    }
}

/// The work of this fire, after marking what older holders left RUNNING as abandoned.
async fn plan_work(job: &SettleJob, lease: &Lease, plan: &Plan) -> Result<Work, PlanError> {
    settlement::records::abandon_stale(&job.inner.pool, &job.inner.spec.task_name, lease.fencing_token).await?;
    pending_work(job, plan).await
}

/// The dates of `plan` that have no SUCCESS yet, oldest first (with the gaps before them), and,
/// for a scheduled fire, whether changed loans wait. An operator's run is about its dates only:
/// when they are all settled there is nothing to run.
///
/// Only dates that have ended by the database's clock are planned, whatever the trigger: a
/// replica whose clock runs ahead may fire for a slot whose date is still in progress. The
/// execution record checks again, in the date's fenced transaction ([`settlement::records`]).
async fn pending_work(job: &SettleJob, plan: &Plan) -> Result<Work, PlanError> {
    let inner = &job.inner;
    let task = &inner.spec.task_name;
    let today = store::clock::business_today(&inner.pool, inner.tz).await?;
    let not_ended = |date: NaiveDate| {
        format!(
            "{date} has not ended by the database's clock (today is {today} in {}); it is settled once it has",
            inner.tz
        )
    };
    match plan {
        Plan::CatchUp { target } => {
            let ended = today.pred_opt().unwrap_or(today).min(*target);
            let start_date = settlement::plan::start_date(&inner.pool, task, inner.start_date, ended).await?;
            let dates =
                settlement::plan::unsettled_from(&inner.pool, task, start_date, ended, inner.backfill_max_days).await?;
            let changes_pending = store::loans::changes_pending(&inner.pool).await?;
            Ok(Work {
                start_date,
                dates,
                changes_pending,
                not_ended: (*target >= today).then(|| not_ended(*target)),
            })
        }
        Plan::Dates(requested) => {
            let (ended, later): (Vec<NaiveDate>, Vec<NaiveDate>) = requested.iter().partition(|d| **d < today);
            let first = requested.iter().min().copied().unwrap_or_default();
            let start_date = settlement::plan::start_date(&inner.pool, task, inner.start_date, first).await?;
            let dates = settlement::plan::manual_from(&inner.pool, task, start_date, &ended).await?;
            Ok(Work {
                start_date,
                dates,
                changes_pending: false,
                not_ended: later.iter().min().map(|d| not_ended(*d)),
            })
        }
    }
}

async fn walk(
    job: &SettleJob,
    trigger: Trigger,
    fired_at: DateTime<Utc>,
    lease: Lease,
    start_date: NaiveDate,
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
        start_date,
        business_tz: inner.tz,
        batch_size: inner.batch_size,
    };
    let span = tracing::info_span!(
        "job.fire",
        job.task_name = %context.task_name,
        job.trigger = trigger.as_str(),
        lock.fencing_token = context.fencing_token
    );
    let report = tracing::Instrument::instrument(
        async {
            let report =
                settlement::settle_dates_observed(&inner.pool, &context, &dates, &between_dates, &abort, |_| {
                    progress.send_modify(|done| *done += 1);
                })
                .await;
            if report.completed() && !between_dates.is_cancelled() {
                accrue_changes(&inner.pool, &context, &abort).await;
            }
            report
        },
        span,
    )
    .await;
    report_metrics(&context, &report, inner.time.now());
    // Stopped first: a lease that ran out while the walk was ending is lost too.
    let lost = keeper.lost();
    let lease = keeper.stop().await;
    let lost_lease = lost.is_cancelled();
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
    // After the release: the audit of a month the fire made final delays no other replica.
    crate::audit::audit_finalised_months(&inner.pool, &inner.audit, &report, &inner.shutdown).await;
    RunReport {
        fencing_token: lease.fencing_token,
        walk: report,
        lost_lease,
    }
}

/// Loans recorded or changed while the walk ran (or before a fire with no date to settle) are
/// accrued as of the latest settled date. A failure is logged only: the queue stays, and the next
/// fire takes it.
async fn accrue_changes(pool: &sqlx::PgPool, context: &RunContext, abort: &CancellationToken) {
    match store::loans::changes_pending(pool).await {
        Ok(false) => {}
        Ok(true) => {
            if let Err(error) = settlement::settle_changes(pool, context, abort).await {
                tracing::warn!(
                    job.task_name = %context.task_name,
                    lock.fencing_token = context.fencing_token,
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
            trigger: self.trigger,
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

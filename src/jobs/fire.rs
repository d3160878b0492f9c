//! One fire, stage by stage, as CONTRACT §2 tells it:
//!
//! ```text
//! Fire ─guard─▶ Guarded ─lock─▶ Locked ─plan─▶ Planned ─walk─▶ (walking) ─▶ released: RunReport
//!  │              │               │              │
//!  └──────────────┴───────────────┴──────────────┴──▶ Stopped: the attempt says where and why
//! ```
//!
//! Each stage is a type that only the stage before it produces, and owns what that stage took:
//! a [`Guarded`] fire holds the in-process guard, a [`Locked`] one also the lease, a [`Planned`]
//! one also its dates. So a walk without the guard, the lease or a plan cannot be written, and a
//! stage that stops gives back what it holds (a [`Locked`] fire releases its lease). Whatever the
//! fire reached, its attempt is recorded in one place, [`start`]: WON for a planned fire, or
//! what stopped it. The walk's own end (its lease lost) is recorded when the walk is over.

use std::time::Instant;

use chrono::{DateTime, NaiveDate, Utc};
use tokio::sync::{OwnedMutexGuard, oneshot, watch};
use tokio::task::JoinHandle;

use super::SettleJob;
use super::plan::{Plan, PlanError, Request};
use super::walk;
use crate::domain::{BeforeStart, FencingToken, RangeError};
use crate::lock::{Acquired, Lease, LeaseKeeper};
use crate::settlement::{DateOutcome, RunContext, Trigger, WalkObserver, WalkReport};
use crate::store::attempts::{self, AttemptOutcome, NewAttempt};
use crate::telemetry::metrics;

/// Why a fire did not run. Each is recorded in the attempt timeline before it is returned,
/// except a bad range and a shutdown, which never reached the job.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Refused {
    /// An operator's range breaks a rule that needs no look at the records.
    #[error(transparent)]
    Invalid(#[from] RangeError),
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
        fencing_token: FencingToken,
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
    pub fencing_token: FencingToken,
    pub dates: Vec<NaiveDate>,
    /// How many of `dates` are done (settled or stopped), for progress bars.
    pub progress: watch::Receiver<usize>,
    first_execution: Option<oneshot::Receiver<Option<i64>>>,
    handle: JoinHandle<RunReport>,
}

/// How a fire ended.
#[derive(Debug)]
pub struct RunReport {
    pub fencing_token: FencingToken,
    pub walk: WalkReport,
    /// The lease was lost mid-run (renewal failed, or another holder took over).
    pub lost_lease: bool,
}

impl Started {
    /// The execution record of the first date, as soon as the walk has it: RUNNING, or the
    /// SUCCESS another holder recorded since the plan. `None` when the walk stopped before the
    /// first date had a record (fenced, the database down, a shutdown), or has no date (it only
    /// accrues changed loans); the report then says why. Answers once; later calls say `None`.
    pub async fn first_execution(&mut self) -> Option<i64> {
        self.first_execution.take()?.await.ok().flatten()
    }

    pub async fn wait(self) -> RunReport {
        match self.handle.await {
            Ok(report) => report,
            Err(join_error) => std::panic::resume_unwind(join_error.into_panic()),
        }
    }
}

/// Runs a fire through its stages; see the module docs.
pub(super) async fn start(
    job: &SettleJob,
    trigger: Trigger,
    fired_at: DateTime<Utc>,
    request: Request,
) -> Result<Started, Refused> {
    let fire = Fire {
        job: job.clone(),
        trigger,
        fired_at,
    };
    let reached = advance(fire.clone(), &request).await;
    let attempt = match &reached {
        Ok(planned) => Some(planned.attempt()),
        Err(stopped) => stopped.attempt.clone(),
    };
    if let Some(attempt) = attempt {
        fire.record(&attempt).await;
    }
    match reached {
        Ok(planned) => Ok(planned.walk()),
        Err(stopped) => Err(stopped.refused),
    }
}

/// The stages up to the walk, stopping at the first that refuses.
async fn advance(fire: Fire, request: &Request) -> Result<Planned, Stopped> {
    fire.check(request).await?;
    let guarded = fire.guard()?;
    guarded.look_ahead(request).await?;
    let locked = guarded.lock().await?;
    locked.plan(request).await
}

/// A trigger's fire of the job, before it took anything.
#[derive(Clone)]
struct Fire {
    job: SettleJob,
    trigger: Trigger,
    fired_at: DateTime<Utc>,
}

/// The fire holds the in-process guard: this process runs no other fire of the job.
struct Guarded {
    fire: Fire,
    guard: OwnedMutexGuard<()>,
}

/// The fire holds the lease too: no other replica runs the job until it is released or expires.
struct Locked {
    guarded: Guarded,
    lease: Lease,
}

/// The fire knows its dates (and that there is work): next it walks them.
struct Planned {
    locked: Locked,
    plan: Plan,
}

/// One row of the attempt timeline, before it is written.
#[derive(Debug, Clone)]
struct Attempt {
    outcome: AttemptOutcome,
    fencing_token: Option<FencingToken>,
    holder: Option<String>,
    detail: Option<String>,
}

impl Attempt {
    fn new(outcome: AttemptOutcome, fencing_token: Option<FencingToken>, detail: Option<String>) -> Self {
        Attempt {
            outcome,
            fencing_token,
            holder: None,
            detail,
        }
    }
}

/// Where a fire stopped before its walk: what the caller is told, and what the timeline records
/// (nothing for a refusal that never reached the job: a bad range, a shutdown).
struct Stopped {
    refused: Refused,
    attempt: Option<Attempt>,
}

impl Stopped {
    fn unrecorded(refused: Refused) -> Self {
        Stopped { refused, attempt: None }
    }

    fn recorded(refused: Refused, attempt: Attempt) -> Self {
        Stopped {
            refused,
            attempt: Some(attempt),
        }
    }
}

impl Fire {
    /// An operator's range is checked before anything is taken, and a bad one never reaches the
    /// timeline: it is the request that is wrong, not the job.
    async fn check(&self, request: &Request) -> Result<(), Stopped> {
        if self.job.is_shutting_down() {
            return Err(Stopped::unrecorded(Refused::ShuttingDown));
        }
        match self.job.planner().check(request).await {
            Ok(()) => Ok(()),
            Err(PlanError::Range(error)) => Err(Stopped::unrecorded(Refused::Invalid(error))),
            Err(error) => Err(self.planning_failed(error, None, AttemptOutcome::Unavailable)),
        }
    }

    /// Within one process the job never overlaps itself: a fire that finds one running is
    /// skipped and recorded, not queued.
    fn guard(self) -> Result<Guarded, Stopped> {
        let inner = &self.job.inner;
        let Ok(guard) = inner.running.clone().try_lock_owned() else {
            let activity = self.job.activity();
            let detail = activity.to_string();
            tracing::warn!(job.task_name = %inner.spec.task_name, job.trigger = self.trigger.as_str(), running = %detail, "fire skipped: the previous one is still running");
            return Err(Stopped::recorded(
                Refused::Busy(activity),
                Attempt::new(AttemptOutcome::Busy, None, Some(detail)),
            ));
        };
        self.job.set_activity(Activity::Starting { trigger: self.trigger });
        // Shutdown may have begun while this fire reached the guard (a retry waking up, say).
        if self.job.is_shutting_down() {
            return Err(Stopped::unrecorded(Refused::ShuttingDown));
        }
        Ok(Guarded { fire: self, guard })
    }

    /// A planner's refusal as the stage that met it records it.
    fn planning_failed(
        &self,
        error: PlanError,
        fencing_token: Option<FencingToken>,
        outcome: AttemptOutcome,
    ) -> Stopped {
        let refused = match error {
            PlanError::Range(error) => Refused::Invalid(error),
            PlanError::BeforeStart(before) => Refused::BeforeStart(before),
            PlanError::Db(error) => Refused::Unavailable(format!("planning failed: {error}")),
        };
        let detail = refused.to_string();
        Stopped::recorded(refused, Attempt::new(outcome, fencing_token, Some(detail)))
    }

    /// Records `attempt`. Best effort: the timeline must never stop a fire (and when the
    /// database is down, the attempt cannot be recorded anyway; the log line remains).
    async fn record(&self, attempt: &Attempt) {
        let inner = &self.job.inner;
        let row = NewAttempt {
            task_name: &inner.spec.task_name,
            trigger: self.trigger,
            instance_id: &inner.spec.instance_id,
            fired_at: self.fired_at,
            outcome: attempt.outcome,
            fencing_token: attempt.fencing_token,
            holder: attempt.holder.as_deref(),
            detail: attempt.detail.as_deref(),
        };
        metrics::lock_attempt(&inner.spec.task_name, attempt.outcome.as_str());
        if let Err(error) = attempts::record(&inner.pool, &row).await {
            tracing::warn!(%error, attempt.outcome = attempt.outcome.as_str(), "could not record the attempt");
        }
    }
}

impl Guarded {
    /// For an operator's dates, a cheap look before taking the lock: when every date is settled
    /// already, say so without touching the lock, whose lock_at_least_for would otherwise answer
    /// "held" for a minute after the run that settled them. The plan is made again under the
    /// lock, which has the last word. Scheduled fires go straight to the lock.
    async fn look_ahead(&self, request: &Request) -> Result<(), Stopped> {
        if let Request::CatchUp { .. } = request {
            return Ok(());
        }
        let fire = &self.fire;
        match fire.job.planner().plan(request).await {
            Ok(plan) if plan.is_empty() => Err(Stopped::recorded(
                Refused::NothingToDo,
                Attempt::new(AttemptOutcome::NothingToDo, None, plan.not_ended),
            )),
            Ok(_) => Ok(()),
            Err(error @ (PlanError::BeforeStart(_) | PlanError::Range(_))) => {
                Err(fire.planning_failed(error, None, AttemptOutcome::NothingToDo))
            }
            Err(error) => Err(fire.planning_failed(error, None, AttemptOutcome::Unavailable)),
        }
    }

    async fn lock(self) -> Result<Locked, Stopped> {
        let inner = &self.fire.job.inner;
        match inner.lock.try_acquire(&inner.spec).await {
            Ok(Acquired::Won(lease)) => {
                inner.hooks.run_on_granted(lease.fencing_token);
                Ok(Locked { guarded: self, lease })
            }
            Ok(Acquired::Held { holder, locked_until }) => {
                tracing::info!(job.task_name = %inner.spec.task_name, lock.holder = %holder, "lock held by another replica; nothing to do here");
                let attempt = Attempt {
                    holder: Some(holder.clone()),
                    ..Attempt::new(AttemptOutcome::Held, None, None)
                };
                Err(Stopped::recorded(Refused::Held { holder, locked_until }, attempt))
            }
            // Whatever kept the store from answering (Redis, the database, a timeout, a corrupt
            // value, the configuration), the fire did not learn whether it may run: refused as
            // unavailable, with the cause's message as the attempt's detail.
            Err(error) => {
                let detail = error.to_string();
                tracing::warn!(job.task_name = %inner.spec.task_name, error = %detail, "lock store unavailable; fire skipped");
                Err(Stopped::recorded(
                    Refused::Unavailable(detail.clone()),
                    Attempt::new(AttemptOutcome::Unavailable, None, Some(detail)),
                ))
            }
        }
    }
}

impl Locked {
    fn fire(&self) -> &Fire {
        &self.guarded.fire
    }

    /// The plan under the lock, after marking what older holders left RUNNING as abandoned. A
    /// fire with nothing to do, or that cannot plan, releases its lease before it stops.
    async fn plan(self, request: &Request) -> Result<Planned, Stopped> {
        let job = &self.fire().job;
        let token = self.lease.fencing_token;
        let planned = async {
            crate::settlement::records::abandon_stale(&job.inner.pool, &job.inner.spec.task_name, token).await?;
            job.planner().plan(request).await
        }
        .await;
        let stopped = match planned {
            Ok(plan) if !plan.is_empty() => {
                job.set_activity(Activity::Walking {
                    trigger: self.fire().trigger,
                    fencing_token: token,
                    dates: plan.dates.clone(),
                });
                return Ok(Planned { locked: self, plan });
            }
            Ok(plan) => Stopped::recorded(
                Refused::NothingToDo,
                Attempt::new(AttemptOutcome::NothingToDo, Some(token), plan.not_ended),
            ),
            Err(error) => self
                .fire()
                .planning_failed(error, Some(token), AttemptOutcome::Unavailable),
        };
        walk::release(job, &self.lease).await;
        Err(stopped)
    }
}

impl Planned {
    fn attempt(&self) -> Attempt {
        Attempt::new(
            AttemptOutcome::Won,
            Some(self.locked.lease.fencing_token),
            Some(self.plan.describe()),
        )
    }

    /// Walks the plan's dates in the background under a renewed lease, then releases the lock
    /// and runs the job's after-walk hooks.
    fn walk(self) -> Started {
        let fire = &self.locked.guarded.fire;
        let inner = &fire.job.inner;
        let token = self.locked.lease.fencing_token;
        tracing::info!(
            job.task_name = %inner.spec.task_name,
            job.trigger = fire.trigger.as_str(),
            lock.fencing_token = token.0,
            job.dates = self.plan.dates.len(),
            job.changes_pending = self.plan.changes_pending,
            "lock won; settling"
        );
        let dates = self.plan.dates.clone();
        let (done, progress) = watch::channel(0);
        let (first, first_execution) = oneshot::channel();
        let handle = tokio::spawn(self.walk_to_release(Progress {
            done,
            first: Some(first),
        }));
        Started {
            fencing_token: token,
            dates,
            progress,
            first_execution: Some(first_execution),
            handle,
        }
    }

    async fn walk_to_release(self, progress: Progress) -> RunReport {
        let Planned { locked, plan } = self;
        let Locked { guarded, lease } = locked;
        let Guarded { fire, guard: _guard } = guarded;
        let job = &fire.job;
        let inner = &job.inner;
        let started = Instant::now();
        let keeper = LeaseKeeper::start(inner.lock.clone(), lease.clone(), inner.spec.at_most_for);
        let context = RunContext {
            task_name: inner.spec.task_name.clone(),
            fencing_token: lease.fencing_token,
            instance_id: inner.spec.instance_id.clone(),
            trigger: fire.trigger,
            start_date: plan.start_date,
            business_tz: inner.planner.business_tz,
            batch_size: inner.batch_size,
            statement_limits: inner.statement_limits,
        };
        let report = walk::settle(job, &context, &plan.dates, &keeper, progress).await;
        // Stopped first: a lease that ran out while the walk was ending is lost too.
        let lost = keeper.lost();
        let lease = keeper.stop().await;
        let lost_lease = lost.is_cancelled();
        if lost_lease {
            fire.record(&Attempt::new(
                AttemptOutcome::LostLease,
                Some(lease.fencing_token),
                Some("the lease was lost; the run stopped".to_owned()),
            ))
            .await;
            tracing::warn!(job.task_name = %context.task_name, lock.fencing_token = lease.fencing_token.0, "lease lost; run stopped");
        } else {
            walk::release(job, &lease).await;
        }
        tracing::info!(
            job.task_name = %context.task_name,
            lock.fencing_token = lease.fencing_token.0,
            job.dates_settled = report.succeeded(),
            duration_ms = started.elapsed().as_millis() as u64,
            "fire finished"
        );
        // After the release: what a hook does (the audit of a month the fire made final) delays
        // no other replica.
        inner.hooks.run_after_walk(walk::walked(&report, &inner.shutdown)).await;
        RunReport {
            fencing_token: lease.fencing_token,
            walk: report,
            lost_lease,
        }
    }
}

/// Tells the caller how the walk goes: dates done, and the first date's execution record.
struct Progress {
    done: watch::Sender<usize>,
    first: Option<oneshot::Sender<Option<i64>>>,
}

impl WalkObserver for Progress {
    fn started(&mut self, _date: NaiveDate, execution_id: i64) {
        if let Some(first) = self.first.take() {
            let _ = first.send(Some(execution_id));
        }
    }

    fn finished(&mut self, outcome: &DateOutcome) {
        if let Some(first) = self.first.take() {
            let _ = first.send(outcome.execution_id);
        }
        self.done.send_modify(|done| *done += 1);
    }
}

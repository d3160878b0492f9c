//! The nightly settlement job as it runs on each replica: one fire goes guard → lock → plan →
//! walk → release, whatever triggered it (the cron, the catch-up at start, a held fire's retry,
//! an operator through the API or the CLI).
//!
//! - [`SettleJob::start`] is the one entry point. A fire moves through typed stages
//!   ([`fire`]): it refuses (and records why) when this process is still running the previous
//!   fire, when another replica holds the lock, when the lock store is unreachable, or when
//!   there is nothing to do; otherwise it returns at once with the dates it will settle while a
//!   background task settles them under a renewed lease.
//! - [`plan`] is the one planner: which dates a fire settles, for every trigger, with the
//!   operator's rules in one place.
//! - [`hooks`] is what runs after a walk (the audit of finalised months), handed to the job at
//!   start-up: the job imports none of the modules that use it.
//! - [`scheduler`] wires the cron ticker and the catch-up at start to it, and fires again when
//!   a scheduled fire met a held lock ([`scheduler::fire_until_run`]).

mod fire;
pub mod hooks;
pub mod plan;
pub mod scheduler;
mod walk;

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use sqlx::PgPool;
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use crate::clock::DatabaseTime;
use crate::config::Settings;
use crate::domain::{SETTLE_FINES, TaskName};
use crate::lock::{JobLock, LockSpec};
use crate::schedule::{CronSchedule, ScheduleError};
use crate::settlement::Trigger;
use crate::store::session::StatementLimits;

pub use fire::{Activity, Refused, RunReport, Started};
pub use hooks::{Hooks, Walked};
pub use plan::{Plan, PlanError, Planner, Request};

/// The job on this replica. Cheap to clone; all clones share the in-process guard.
#[derive(Clone)]
pub struct SettleJob {
    inner: Arc<Inner>,
}

struct Inner {
    pool: PgPool,
    lock: JobLock,
    /// The database's clock as this replica estimates it: the cron waits on it.
    time: DatabaseTime,
    spec: LockSpec,
    schedule: CronSchedule,
    /// Which dates a fire settles.
    planner: Planner,
    batch_size: i64,
    /// The limits of each statement of a date's transaction.
    statement_limits: StatementLimits,
    /// What runs after each walk.
    hooks: Hooks,
    /// Held for the whole of a fire: the job never overlaps itself within one process.
    running: Arc<Mutex<()>>,
    /// What the fire holding `running` is doing, for the fire or request it turns away.
    activity: std::sync::Mutex<Activity>,
    /// Cancelled at shutdown: no new fire, and a running walk stops after its current date.
    shutdown: CancellationToken,
    /// Cancelled when the shutdown grace runs out: a running walk abandons its current date.
    abort: CancellationToken,
}

impl SettleJob {
    /// The job on `pool`, locking with `lock`, its cron awaited on `time`, running `hooks` after
    /// each walk.
    pub fn new(
        pool: PgPool,
        lock: JobLock,
        time: DatabaseTime,
        settings: &Settings,
        hooks: Hooks,
    ) -> Result<Self, ScheduleError> {
        let job = &settings.job;
        Ok(SettleJob {
            inner: Arc::new(Inner {
                planner: Planner {
                    pool: pool.clone(),
                    task_name: SETTLE_FINES,
                    business_tz: settings.business_tz,
                    configured_start: job.settle_start_date,
                    max_days: job.backfill_max_days,
                },
                pool,
                lock,
                time,
                spec: LockSpec {
                    task_name: SETTLE_FINES,
                    instance_id: settings.instance_id.clone(),
                    at_most_for: job.lock_at_most_for,
                    at_least_for: job.lock_at_least_for,
                },
                schedule: CronSchedule::parse(&job.settle_cron, settings.business_tz)?,
                batch_size: job.batch_size,
                statement_limits: job.statement_limits,
                hooks,
                running: Arc::new(Mutex::new(())),
                activity: std::sync::Mutex::new(Activity::Starting { trigger: Trigger::Cron }),
                shutdown: CancellationToken::new(),
                abort: CancellationToken::new(),
            }),
        })
    }

    pub fn task_name(&self) -> &TaskName {
        &self.inner.spec.task_name
    }

    pub fn schedule(&self) -> &CronSchedule {
        &self.inner.schedule
    }

    pub fn lock(&self) -> &JobLock {
        &self.inner.lock
    }

    /// Which dates a fire settles.
    pub fn planner(&self) -> &Planner {
        &self.inner.planner
    }

    pub fn pool(&self) -> &PgPool {
        &self.inner.pool
    }

    /// The database's clock as this replica estimates it (the cron's clock).
    pub fn database_time(&self) -> &DatabaseTime {
        &self.inner.time
    }

    pub fn business_tz(&self) -> Tz {
        self.inner.planner.business_tz
    }

    /// Starts a fire of `request`; see the module docs.
    pub async fn start(&self, trigger: Trigger, fired_at: DateTime<Utc>, request: Request) -> Result<Started, Refused> {
        fire::start(self, trigger, fired_at, request).await
    }

    /// Starts a fire and waits for it to finish.
    pub async fn fire(
        &self,
        trigger: Trigger,
        fired_at: DateTime<Utc>,
        request: Request,
    ) -> Result<RunReport, Refused> {
        Ok(self.start(trigger, fired_at, request).await?.wait().await)
    }

    /// Takes no new fire; lets a running fire finish its current date within `grace`, then makes
    /// it abandon the date (rolled back, recorded FAILED). The fire releases its lock either way.
    pub async fn shutdown(&self, grace: Duration) {
        self.inner.shutdown.cancel();
        if tokio::time::timeout(grace, self.inner.running.lock()).await.is_err() {
            tracing::warn!(
                grace_ms = grace.as_millis() as u64,
                "settlement still running after the grace period; abandoning its date"
            );
            self.inner.abort.cancel();
            let _ = tokio::time::timeout(Duration::from_secs(30), self.inner.running.lock()).await;
        }
    }

    /// What the fire holding the in-process guard is doing.
    fn activity(&self) -> Activity {
        self.inner
            .activity
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    fn set_activity(&self, activity: Activity) {
        *self
            .inner
            .activity
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = activity;
    }

    pub fn is_shutting_down(&self) -> bool {
        self.inner.shutdown.is_cancelled()
    }

    /// Completes once [`SettleJob::shutdown`] was called: waits that must end at shutdown (a
    /// held fire waiting to try again) select on it.
    pub async fn shutting_down(&self) {
        self.inner.shutdown.cancelled().await;
    }

    /// Completes when this process runs no fire of the job (at once when it runs none).
    pub async fn idle(&self) {
        drop(self.inner.running.lock().await);
    }
}

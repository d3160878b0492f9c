//! The nightly settlement job as it runs on each replica: one fire goes schedule → lock →
//! settlement walk → records, whatever triggered it (cron, catch-up at start, an operator).
//!
//! - [`SettleJob::start`] is the one entry point. It refuses (and records why) when this process
//!   is still running the previous fire, when another replica holds the lock, or when the lock
//!   store is unreachable; otherwise it returns at once with the dates it will settle while a
//!   background task settles them under a renewed lease.
//! - [`scheduler`] wires the cron ticker and the catch-up at start to it, and fires again when
//!   a scheduled fire met a held lock ([`scheduler::fire_until_run`]).

mod run;
pub mod scheduler;

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, NaiveDate, Utc};
use chrono_tz::Tz;
use sqlx::PgPool;
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use crate::clock::DatabaseTime;
use crate::config::Settings;
use crate::lock::{JobLock, LockSpec};
use crate::schedule::{CronSchedule, ScheduleError};
use crate::settlement::Trigger;

pub use run::{Activity, Refused, RunReport, Started};

/// The settlement job's task name: the key of its lock, executions, attempts and alerts.
pub const SETTLE_FINES: &str = "settle-fines";

/// Which dates a fire settles.
#[derive(Debug, Clone)]
pub enum Plan {
    /// Every date from the day after the last SUCCESS through `target` (cron and start-up).
    CatchUp { target: NaiveDate },
    /// These dates, skipping those already settled (manual runs and backfills).
    Dates(Vec<NaiveDate>),
}

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
    tz: Tz,
    start_date: Option<NaiveDate>,
    backfill_max_days: u32,
    batch_size: i64,
    /// The audit of the months a fire makes final (`crate::audit`).
    audit: crate::audit::AuditConfig,
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
    /// The job on `pool`, locking with `lock`, its cron awaited on `time`.
    pub fn new(pool: PgPool, lock: JobLock, time: DatabaseTime, settings: &Settings) -> Result<Self, ScheduleError> {
        let job = &settings.job;
        Ok(SettleJob {
            inner: Arc::new(Inner {
                pool,
                lock,
                time,
                spec: LockSpec {
                    task_name: SETTLE_FINES.to_owned(),
                    instance_id: settings.instance_id.clone(),
                    at_most_for: job.lock_at_most_for,
                    at_least_for: job.lock_at_least_for,
                },
                schedule: CronSchedule::parse(&job.settle_cron, settings.business_tz)?,
                tz: settings.business_tz,
                start_date: job.settle_start_date,
                backfill_max_days: job.backfill_max_days,
                batch_size: job.batch_size,
                audit: crate::audit::AuditConfig::from_settings(settings),
                running: Arc::new(Mutex::new(())),
                activity: std::sync::Mutex::new(Activity::Starting { trigger: Trigger::Cron }),
                shutdown: CancellationToken::new(),
                abort: CancellationToken::new(),
            }),
        })
    }

    pub fn task_name(&self) -> &str {
        &self.inner.spec.task_name
    }

    pub fn schedule(&self) -> &CronSchedule {
        &self.inner.schedule
    }

    pub fn lock(&self) -> &JobLock {
        &self.inner.lock
    }

    pub fn backfill_max_days(&self) -> u32 {
        self.inner.backfill_max_days
    }

    pub fn start_date(&self) -> Option<NaiveDate> {
        self.inner.start_date
    }

    pub fn pool(&self) -> &PgPool {
        &self.inner.pool
    }

    /// The database's clock as this replica estimates it (the cron's clock).
    pub fn database_time(&self) -> &DatabaseTime {
        &self.inner.time
    }

    pub fn business_tz(&self) -> Tz {
        self.inner.tz
    }

    /// Starts a fire; see the module docs.
    pub async fn start(&self, trigger: Trigger, fired_at: DateTime<Utc>, plan: Plan) -> Result<Started, Refused> {
        run::start(self, trigger, fired_at, plan).await
    }

    /// Starts a fire and waits for it to finish.
    pub async fn fire(&self, trigger: Trigger, fired_at: DateTime<Utc>, plan: Plan) -> Result<RunReport, Refused> {
        Ok(self.start(trigger, fired_at, plan).await?.wait().await)
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

//! The loop every replica runs: each second, reap, consume what is due, report the queue; at
//! start, every few minutes and after an outage, reconcile.
//!
//! Nothing here ever stops on an error. Redis or Postgres being away is logged when it starts,
//! every minute while it lasts and when it ends, counted (`finesettle.reminders.redis_errors`),
//! and the next tick tries again. Reminders meanwhile wait in Postgres: the reconciler queues them
//! once Redis answers again.

use std::fmt::Display;
use std::time::Duration;

use chrono::{DateTime, Utc};
use deadpool_redis::Pool;
use sqlx::PgPool;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::consumer::{ConsumerConfig, StepError, consume_once};
use super::metrics;
use super::queue::{DEFAULT_PREFIX, ReminderQueue};
use super::reaper::reap_expired;
use super::reconciler::reconcile;
use crate::config::Settings;
use crate::store;
use crate::ticks::Ticks;

/// What [`run_reminder_worker`] runs, and how often.
#[derive(Debug, Clone)]
pub struct ReminderWorkerConfig {
    /// The queue's key prefix ([`DEFAULT_PREFIX`] in the service).
    pub prefix: String,
    pub consumer: ConsumerConfig,
    /// CONTRACT §4: every second.
    pub poll_every: Duration,
    pub reconcile_every: Duration,
}

impl ReminderWorkerConfig {
    pub fn from_settings(settings: &Settings) -> Self {
        ReminderWorkerConfig {
            prefix: DEFAULT_PREFIX.to_owned(),
            consumer: ConsumerConfig {
                batch_size: 100,
                visibility: Duration::from_secs(30),
                business_tz: settings.business_tz,
            },
            poll_every: Duration::from_secs(1),
            reconcile_every: Duration::from_secs(5 * 60),
        }
    }
}

/// Polls the queue until `stop` is cancelled. A step in progress when `stop` fires finishes
/// first (a few short Redis calls and one statement); what it had not taken stays queued for the
/// other replicas.
///
/// Times come from the database clock, like every lease and "today" in the service, so replicas
/// with skewed clocks agree on what is due and whose deadline passed.
pub async fn run_reminder_worker(pool: PgPool, redis: Pool, config: ReminderWorkerConfig, stop: CancellationToken) {
    let queue = ReminderQueue::with_prefix(redis, &config.prefix);
    let mut redis_outage = Outage::new("Redis");
    let mut database_outage = Outage::new("PostgreSQL");
    let mut next_reconcile = Instant::now();
    let mut ticks = Ticks::new(config.poll_every, &stop);
    tracing::info!(reminders.queue = queue.queue_key(), "reminder worker started");
    while ticks.next().await {
        let now = match store::clock::now(&pool).await {
            Ok(now) => now,
            Err(error) => {
                database_outage.failed(&error);
                continue;
            }
        };
        let mut step = poll(&pool, &queue, &config.consumer, now, &stop).await;
        if step.is_ok() && (redis_outage.is_on() || Instant::now() >= next_reconcile) {
            // After an outage Redis may have come back empty: rebuild at once.
            step = reconcile(&pool, &queue, now, config.consumer.business_tz)
                .await
                .map(|report| {
                    tracing::debug!(
                        reminders.loans = report.loans,
                        reminders.restored = report.restored,
                        "reconciled"
                    );
                    next_reconcile = Instant::now() + config.reconcile_every;
                });
        }
        match step {
            Ok(()) => {
                redis_outage.ended();
                database_outage.ended();
            }
            Err(StepError::Queue(error)) => redis_outage.failed(&error),
            Err(StepError::Database(error)) => database_outage.failed(&error),
        }
    }
    tracing::info!("reminder worker stopped");
}

/// One tick: reap, consume batches while they come back full, report the queue.
async fn poll(
    pool: &PgPool,
    queue: &ReminderQueue,
    consumer: &ConsumerConfig,
    now: DateTime<Utc>,
    stop: &CancellationToken,
) -> Result<(), StepError> {
    reap_expired(queue, now).await?;
    loop {
        let report = consume_once(pool, queue, consumer, now).await?;
        if report.taken > 0 {
            tracing::info!(
                reminders.taken = report.taken,
                reminders.recorded = report.recorded,
                reminders.skipped = report.skipped,
                "reminders delivered"
            );
        }
        if report.taken < consumer.batch_size || stop.is_cancelled() {
            break;
        }
    }
    metrics::queue(&queue.stats().await?, now.timestamp_millis());
    Ok(())
}

/// Logs an outage once when it starts, every minute while it lasts, and once when it ends,
/// rather than once a second.
struct Outage {
    what: &'static str,
    since: Option<Instant>,
    last_logged: Instant,
}

impl Outage {
    const REPEAT_EVERY: Duration = Duration::from_secs(60);

    fn new(what: &'static str) -> Self {
        Outage {
            what,
            since: None,
            last_logged: Instant::now(),
        }
    }

    fn is_on(&self) -> bool {
        self.since.is_some()
    }

    fn failed(&mut self, error: &dyn Display) {
        let now = Instant::now();
        match self.since {
            None => {
                self.since = Some(now);
                self.last_logged = now;
                tracing::error!(
                    error = %error,
                    "reminders paused: {} unavailable; they wait in PostgreSQL and are queued again once it is back",
                    self.what
                );
            }
            Some(since) if now.duration_since(self.last_logged) >= Self::REPEAT_EVERY => {
                self.last_logged = now;
                tracing::error!(
                    error = %error,
                    outage.seconds = now.duration_since(since).as_secs(),
                    "reminders still paused: {} unavailable",
                    self.what
                );
            }
            Some(_) => {}
        }
    }

    fn ended(&mut self) {
        if let Some(since) = self.since.take() {
            tracing::info!(
                outage.seconds = since.elapsed().as_secs(),
                "reminders resumed: {} available again",
                self.what
            );
        }
    }
}

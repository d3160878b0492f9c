//! The consumer: take due reminders, record them in Postgres, then acknowledge them.
//!
//! The order is what makes a crash harmless. A consumer that dies after taking a batch leaves it
//! in the processing set, and the reaper puts it back once its visibility deadline passes; one
//! that dies after recording but before acknowledging gets its batch redelivered, and the second
//! recording inserts nothing (`notification_once`). So every reminder is recorded at least once
//! by the queue's doing and at most once by the database's: exactly once.

use std::time::Duration;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use sqlx::PgPool;

use super::queue::{QueueError, ReminderQueue, Taken};
use super::{Reminder, metrics};
use crate::domain::business_date;
use crate::store;

/// How a consumer takes its batches.
#[derive(Debug, Clone, Copy)]
pub struct ConsumerConfig {
    /// Reminders taken per step: bounds the work a dead consumer leaves for the reaper.
    pub batch_size: usize,
    /// How long a taken batch stays invisible to other consumers. Far longer than recording a
    /// batch takes (one statement), so only a dead or stuck consumer's items are redelivered.
    pub visibility: Duration,
    pub business_tz: Tz,
}

/// What one step did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ConsumeReport {
    /// Reminders taken from the queue (and acknowledged).
    pub taken: usize,
    /// New notifications recorded.
    pub recorded: u64,
    /// Taken but not recorded: sent before, loan returned, "due tomorrow" too late, or a set
    /// member that is not a reminder.
    pub skipped: u64,
}

/// One step failed; the reminders it took (if any) stay in the processing set and come back
/// after their deadline.
#[derive(Debug, thiserror::Error)]
pub enum StepError {
    #[error(transparent)]
    Queue(#[from] QueueError),
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
}

/// One step at `now`: take up to a batch of due reminders, record them, acknowledge them.
/// Returns at once with an empty report when nothing is due.
pub async fn consume_once(
    pool: &PgPool,
    queue: &ReminderQueue,
    config: &ConsumerConfig,
    now: DateTime<Utc>,
) -> Result<ConsumeReport, StepError> {
    let taken = take(queue, config, now).await?;
    if taken.is_empty() {
        return Ok(ConsumeReport::default());
    }
    let recorded = record(pool, &taken, now, config.business_tz).await?;
    acknowledge(queue, &taken).await?;
    let skipped = taken.len() as u64 - recorded;
    metrics::delivered(recorded, skipped);
    Ok(ConsumeReport {
        taken: taken.len(),
        recorded,
        skipped,
    })
}

/// The first part of a step, alone: due reminders move to the processing set until
/// `now + visibility`. Public so that tests can play a consumer that dies right after it.
pub async fn take(
    queue: &ReminderQueue,
    config: &ConsumerConfig,
    now: DateTime<Utc>,
) -> Result<Vec<Taken>, QueueError> {
    let now_ms = now.timestamp_millis();
    let deadline_ms = now_ms.saturating_add(i64::try_from(config.visibility.as_millis()).unwrap_or(i64::MAX));
    queue.take_due(now_ms, deadline_ms, config.batch_size).await
}

/// The second part: records the taken reminders that are still worth sending (see
/// [`store::notifications::record`]); returns how many were new. Members that are not reminders
/// are logged and left for [`acknowledge`] to drop.
pub async fn record(pool: &PgPool, taken: &[Taken], now: DateTime<Utc>, tz: Tz) -> sqlx::Result<u64> {
    let reminders: Vec<Reminder> = taken
        .iter()
        .filter_map(|item| match item.member.parse() {
            Ok(reminder) => Some(reminder),
            Err(error) => {
                tracing::warn!(reminder.member = %item.member, %error, "dropping a queue item that is not a reminder");
                None
            }
        })
        .collect();
    if reminders.is_empty() {
        return Ok(0);
    }
    store::notifications::record(pool, &reminders, now, business_date(now, tz)).await
}

/// The last part: the taken reminders leave the processing set.
pub async fn acknowledge(queue: &ReminderQueue, taken: &[Taken]) -> Result<(), QueueError> {
    let members: Vec<String> = taken.iter().map(|item| item.member.clone()).collect();
    queue.ack(&members).await
}

//! The reaper: reminders whose consumer did not acknowledge them by their visibility deadline
//! go back to the queue, to be delivered again.
//!
//! A consumer that crashed, was killed or lost Redis mid-batch leaves its items in the
//! processing set; nothing else would ever look at them. Redelivering them is safe because
//! recording is idempotent (see [`super::consumer`]).

use chrono::{DateTime, Utc};

use super::metrics;
use super::queue::{QueueError, ReminderQueue};

/// Items moved per script call: keeps each call short (Redis runs scripts one at a time).
pub const REAP_BATCH: usize = 1_000;

/// Returns every reminder whose deadline is at or before `now` to the queue; returns how many.
pub async fn reap_expired(queue: &ReminderQueue, now: DateTime<Utc>) -> Result<u64, QueueError> {
    let now_ms = now.timestamp_millis();
    let mut total = 0;
    loop {
        let moved = queue.reap(now_ms, REAP_BATCH).await?;
        total += moved;
        if moved < REAP_BATCH as u64 {
            break;
        }
    }
    if total > 0 {
        metrics::redelivered(total);
        tracing::warn!(
            reminders.redelivered = total,
            "reminders not acknowledged by their deadline returned to the queue (a consumer died or stalled)"
        );
    }
    Ok(total)
}

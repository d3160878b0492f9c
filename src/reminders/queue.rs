//! The delayed queue in Redis: two sorted sets and the Lua scripts that move reminders between
//! them atomically.
//!
//! - `{prefix}:queue` holds waiting reminders, scored by when they are due (ms since the epoch).
//! - `{prefix}:processing` holds reminders a consumer has taken, scored by their visibility
//!   deadline: the instant after which the consumer is presumed dead and the reaper puts them back.
//!
//! A reminder is in at most one of the two sets at a time, and each step is one script, run by
//! Redis as a single command: two consumers can never take the same item, and an item is never
//! in neither set unless it was acknowledged (recorded in Postgres) or cancelled.
//!
//! The prefix is a hash tag (`{finesettle:reminders}:queue`), so in Redis Cluster both keys live
//! in the same slot, as a script touching both requires. Needs Redis 6.2 or newer (`ZRANGE ..
//! BYSCORE`).

use std::sync::LazyLock;
use std::time::Duration;

use chrono::{DateTime, Utc};
use deadpool_redis::{Connection, Pool};
use redis::Script;
use serde::Serialize;
use utoipa::ToSchema;

use super::timing::Timed;
use super::{Reminder, metrics};
use crate::domain::LoanId;

/// The key prefix the service uses. Tests and benchmarks pick their own to stay apart.
pub const DEFAULT_PREFIX: &str = "finesettle:reminders";

/// The longest one queue operation may take, connection included, before it counts as Redis
/// being unavailable. The pool and the connections have their own timeouts (2 s to connect,
/// 500 ms per reply); this bounds the sum, so a caller such as a loan request never waits longer.
pub const OP_TIMEOUT: Duration = Duration::from_secs(3);

/// Queues each reminder at its score unless it is queued already (keeping its time) or a
/// consumer holds it (queuing it again would deliver it twice). Returns how many were added.
///
/// KEYS: queue, processing. ARGV: score, member, score, member, ...
const SCHEDULE: &str = r"
local added = 0
for i = 1, #ARGV, 2 do
    local member = ARGV[i + 1]
    if not redis.call('ZSCORE', KEYS[2], member) then
        added = added + redis.call('ZADD', KEYS[1], 'NX', ARGV[i], member)
    end
end
return added
";

/// Takes up to ARGV[3] reminders due at or before ARGV[1] (oldest first) and moves them into the
/// processing set with the visibility deadline ARGV[2]. Returns member, due score, member, ...
///
/// KEYS: queue, processing.
const TAKE_DUE: &str = r"
local due = redis.call('ZRANGE', KEYS[1], '-inf', ARGV[1], 'BYSCORE', 'LIMIT', 0, ARGV[3], 'WITHSCORES')
for i = 1, #due, 2 do
    redis.call('ZREM', KEYS[1], due[i])
    redis.call('ZADD', KEYS[2], ARGV[2], due[i])
end
return due
";

/// Moves up to ARGV[2] reminders whose visibility deadline is at or before ARGV[1] back to the
/// queue, due at once (ARGV[1]); one queued meanwhile keeps its place. Returns how many moved.
///
/// KEYS: queue, processing.
const REAP: &str = r"
local expired = redis.call('ZRANGE', KEYS[2], '-inf', ARGV[1], 'BYSCORE', 'LIMIT', 0, ARGV[2])
for _, member in ipairs(expired) do
    redis.call('ZREM', KEYS[2], member)
    redis.call('ZADD', KEYS[1], 'NX', ARGV[1], member)
end
return #expired
";

static SCHEDULE_SCRIPT: LazyLock<Script> = LazyLock::new(|| Script::new(SCHEDULE));
static TAKE_DUE_SCRIPT: LazyLock<Script> = LazyLock::new(|| Script::new(TAKE_DUE));
static REAP_SCRIPT: LazyLock<Script> = LazyLock::new(|| Script::new(REAP));

/// Redis did not do what was asked. Callers log it, count it and carry on: Postgres is the
/// source of truth, and the reconciler restores whatever a failed write left out.
#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    #[error("no Redis connection: {0}")]
    Connection(#[from] deadpool_redis::PoolError),
    #[error("Redis command failed: {0}")]
    Command(#[from] redis::RedisError),
    #[error("Redis did not answer within {OP_TIMEOUT:?}")]
    Timeout,
}

/// A reminder a consumer took: its set member (parsed by the consumer, which drops garbage) and
/// when it was due.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taken {
    pub member: String,
    pub due_ms: i64,
}

/// The queue as the jobs view and the metrics show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
pub struct QueueStats {
    /// Reminders waiting, due or not.
    pub depth: u64,
    /// Reminders taken by a consumer and not yet acknowledged.
    pub in_flight: u64,
    /// When the reminder at the head of the queue is (or was) due; null when the queue is empty.
    /// In the past by more than a few seconds means the consumers are behind.
    pub oldest_due_at: Option<DateTime<Utc>>,
}

/// The reminder queue under one key prefix. Cheap to clone.
#[derive(Clone)]
pub struct ReminderQueue {
    redis: Pool,
    queue_key: String,
    processing_key: String,
}

impl std::fmt::Debug for ReminderQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReminderQueue")
            .field("queue_key", &self.queue_key)
            .finish_non_exhaustive()
    }
}

impl ReminderQueue {
    /// The service's queue ([`DEFAULT_PREFIX`]).
    pub fn new(redis: Pool) -> Self {
        Self::with_prefix(redis, DEFAULT_PREFIX)
    }

    pub fn with_prefix(redis: Pool, prefix: &str) -> Self {
        ReminderQueue {
            redis,
            queue_key: format!("{{{prefix}}}:queue"),
            processing_key: format!("{{{prefix}}}:processing"),
        }
    }

    /// The waiting set's key, for people (`redis-cli zrange ...`) and tests.
    pub fn queue_key(&self) -> &str {
        &self.queue_key
    }

    /// The processing set's key.
    pub fn processing_key(&self) -> &str {
        &self.processing_key
    }

    /// Queues reminders (see [`SCHEDULE`]); returns how many were not already queued or held.
    pub async fn schedule(&self, timed: &[Timed]) -> Result<u64, QueueError> {
        if timed.is_empty() {
            return Ok(0);
        }
        let mut invocation = SCHEDULE_SCRIPT.key(&self.queue_key);
        invocation.key(&self.processing_key);
        for item in timed {
            invocation.arg(item.score()).arg(item.reminder.member());
        }
        self.run("schedule", async |conn| invocation.invoke_async(conn).await)
            .await
    }

    /// Moves up to `limit` reminders due at `now_ms` into the processing set, invisible to other
    /// consumers until `deadline_ms` (see [`TAKE_DUE`]). Oldest due first.
    pub async fn take_due(&self, now_ms: i64, deadline_ms: i64, limit: usize) -> Result<Vec<Taken>, QueueError> {
        let mut invocation = TAKE_DUE_SCRIPT.key(&self.queue_key);
        invocation
            .key(&self.processing_key)
            .arg(now_ms)
            .arg(deadline_ms)
            .arg(limit);
        let flat: Vec<String> = self
            .run("take", async |conn| invocation.invoke_async(conn).await)
            .await?;
        Ok(flat
            .chunks_exact(2)
            .map(|pair| Taken {
                member: pair[0].clone(),
                // Scores come back as decimal text; milliseconds are exact in a double.
                due_ms: pair[1].parse::<f64>().map_or(now_ms, |score| score as i64),
            })
            .collect())
    }

    /// Acknowledges taken reminders: they leave the processing set for good. Call only after
    /// their outcome is recorded in Postgres, so that whoever acknowledges an item (even a slow
    /// consumer acknowledging one the reaper handed to another) never loses one.
    pub async fn ack(&self, members: &[String]) -> Result<(), QueueError> {
        if members.is_empty() {
            return Ok(());
        }
        let command = redis::cmd("ZREM").arg(&self.processing_key).arg(members).clone();
        self.run("ack", async |conn| command.query_async::<u64>(conn).await)
            .await?;
        Ok(())
    }

    /// Returns up to `limit` reminders whose visibility deadline is at or before `now_ms` to
    /// the queue (see [`REAP`]); returns how many.
    pub async fn reap(&self, now_ms: i64, limit: usize) -> Result<u64, QueueError> {
        let mut invocation = REAP_SCRIPT.key(&self.queue_key);
        invocation.key(&self.processing_key).arg(now_ms).arg(limit);
        self.run("reap", async |conn| invocation.invoke_async(conn).await).await
    }

    /// Removes a loan's reminders from both sets (a return). One held by a consumer at this
    /// moment may still be delivered; the consumer checks the loan in Postgres first.
    pub async fn cancel(&self, loan_id: LoanId) -> Result<(), QueueError> {
        let members = Reminder::both(loan_id).map(|r| r.member());
        let mut pipe = redis::pipe();
        pipe.atomic()
            .cmd("ZREM")
            .arg(&self.queue_key)
            .arg(&members)
            .ignore()
            .cmd("ZREM")
            .arg(&self.processing_key)
            .arg(&members)
            .ignore();
        self.run("cancel", async |conn| pipe.query_async::<()>(conn).await)
            .await
    }

    /// Depth, in-flight count and oldest due item, read in one transaction.
    pub async fn stats(&self) -> Result<QueueStats, QueueError> {
        let mut pipe = redis::pipe();
        pipe.atomic()
            .zcard(&self.queue_key)
            .zcard(&self.processing_key)
            .cmd("ZRANGE")
            .arg(&self.queue_key)
            .arg(0)
            .arg(0)
            .arg("WITHSCORES");
        // The head comes back as [member, score].
        let (depth, in_flight, head): (u64, u64, Vec<String>) =
            self.run("stats", async |conn| pipe.query_async(conn).await).await?;
        Ok(QueueStats {
            depth,
            in_flight,
            oldest_due_at: head
                .get(1)
                .and_then(|score| score.parse::<f64>().ok())
                .and_then(|score| DateTime::from_timestamp_millis(score as i64)),
        })
    }

    /// Runs one operation on a pooled connection within [`OP_TIMEOUT`]; counts failures by
    /// operation.
    async fn run<T>(
        &self,
        operation: &'static str,
        op: impl AsyncFnOnce(&mut Connection) -> redis::RedisResult<T>,
    ) -> Result<T, QueueError> {
        let attempt = async {
            let mut conn = self.redis.get().await?;
            Ok(op(&mut conn).await?)
        };
        let result = tokio::time::timeout(OP_TIMEOUT, attempt)
            .await
            .unwrap_or(Err(QueueError::Timeout));
        if result.is_err() {
            metrics::redis_error(operation);
        }
        result
    }
}

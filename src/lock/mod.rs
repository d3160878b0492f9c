//! The job lock: who may run a task right now, until when, and with which fencing token.
//!
//! One fire of the job on every replica calls [`JobLock::try_acquire`]; exactly one of them gets
//! a [`Lease`], the others learn who holds it ([`Acquired::Held`]). The winner keeps the lease
//! alive with a [`LeaseKeeper`] while it works, opens every settlement transaction with
//! [`fence::guard`], and releases the lock with [`JobLock::release`] when done.
//!
//! The lock gives mutual exclusion only while every holder behaves: a holder paused past its
//! lease (GC, SIGSTOP, a migrated VM) wakes up still believing it holds it. The fencing token,
//! checked by the database inside each write transaction, is what makes such a holder harmless;
//! [`fence`] explains why in full.
//!
//! Durations follow ShedLock's meaning:
//! - `at_most_for` bounds how long a crashed holder blocks the task: the row is free once
//!   `locked_until` passes, and a live holder pushes `locked_until` forward while it works;
//! - `at_least_for` keeps the lock for at least that long after it was taken, even when the run
//!   ended at once, so a replica whose clock or trigger is a little late does not run it again.
//!
//! - [`postgres`]: the `task_lock` backend (the default), and the statements by which the Redis
//!   backend publishes its fencing token to `task_lock`.
//! - [`redis`]: the Redis backend (`FINESETTLE_LOCK_BACKEND=redis`), publishing its fencing token
//!   to `task_lock` so that the fence below holds for it too.
//! - [`LockError`]: why a store could not answer, with its cause.
//! - [`lease`]: renewal in the background, and the signal that the lease was lost.
//! - [`fence`]: the token check every settlement transaction starts with.

mod error;
pub mod fence;
pub mod lease;
pub mod postgres;
pub mod redis;

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Serialize;
use tokio::time::Instant;
use utoipa::ToSchema;

use crate::config::{LockBackend, Settings};
use crate::domain::{FencingToken, OwnerToken, TaskName};

pub use self::redis::RedisLock;
pub use error::LockError;
pub use fence::{FenceError, Fenced, guard};
pub use lease::LeaseKeeper;
pub use postgres::PgLock;

/// What a replica asks for when a fire of `task_name` reaches it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockSpec {
    pub task_name: TaskName,
    /// Who is asking, for people (`FINESETTLE_INSTANCE_ID`); never used to check ownership.
    pub instance_id: String,
    /// How long the lock lasts unless renewed: the longest a crashed holder blocks the task.
    pub at_most_for: Duration,
    /// The shortest time the lock stays taken after it was acquired, even when released earlier.
    pub at_least_for: Duration,
}

/// A granted lock. Times are the lock store's, except `asked_at`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    pub task_name: TaskName,
    pub locked_by: String,
    /// Fresh for every acquisition: release and renewal match on it, so a restarted process with
    /// the same instance id cannot release the lock its predecessor took.
    pub owner_token: OwnerToken,
    /// One more than the previous acquisition's: writes carrying an older token are refused.
    pub fencing_token: FencingToken,
    /// When the store granted the lock: after any wait for the lock row, not when it was asked.
    pub locked_at: DateTime<Utc>,
    pub locked_until: DateTime<Utc>,
    /// Just before this process sent the acquisition, by its own monotonic clock: no later than
    /// `locked_at`, so [`LeaseKeeper`] counting the lease from here never outlasts the store's.
    /// Meaningless to any other process.
    pub asked_at: Instant,
}

/// The answer to one acquisition attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Acquired {
    Won(Lease),
    /// Someone else holds the lock (or an acquisition of theirs is still in flight).
    Held {
        holder: String,
        locked_until: DateTime<Utc>,
    },
}

/// [`Acquired::Won`] with `lease`, announced by the debug event `$message` from the backend that
/// won: a macro rather than a function so that the event keeps the backend's module as its
/// target.
macro_rules! won {
    ($lease:expr, $message:literal) => {{
        let lease: $crate::lock::Lease = $lease;
        tracing::debug!(
            task.name = %lease.task_name,
            fencing_token = lease.fencing_token.0,
            locked_until = %lease.locked_until,
            $message
        );
        $crate::lock::Acquired::Won(lease)
    }};
}
pub(crate) use won;

// What either backend lists, as of the lock store's clock, is what the admin API serves (CONTRACT
// §6 "lock"): one type (the doc comment below is the OpenAPI description).
/// A job lock row. Rows stay after release; `held` says whether `locked_until` is still ahead.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct Lock {
    #[schema(value_type = String)]
    pub task_name: TaskName,
    /// The holder's instance id.
    pub locked_by: String,
    pub locked_at: DateTime<Utc>,
    pub locked_until: DateTime<Utc>,
    /// Incremented by every acquisition; writes with an older token are refused.
    #[schema(value_type = i64)]
    pub fencing_token: FencingToken,
    pub held: bool,
}

/// The lock backend, chosen by `FINESETTLE_LOCK_BACKEND`. An enum rather than a trait object:
/// the set of backends is closed, and each call stays a plain async method.
#[derive(Debug, Clone)]
pub enum JobLock {
    Postgres(PgLock),
    Redis(RedisLock),
}

impl JobLock {
    /// The PostgreSQL backend on `pool`, with the default wait for a busy lock row.
    pub fn postgres(pool: sqlx::PgPool) -> Self {
        JobLock::Postgres(PgLock::new(pool))
    }

    /// The Redis backend on `redis`, publishing fencing tokens to `task_lock` in `pool`.
    pub fn redis(redis: deadpool_redis::Pool, pool: sqlx::PgPool) -> Self {
        JobLock::Redis(RedisLock::new(redis, pool))
    }

    /// The backend `settings.job.lock_backend` names: the one place that choice is made, for
    /// `serve` and the command line alike. The Redis backend needs the pool of `REDIS_URL`.
    pub fn from_settings(
        pool: sqlx::PgPool,
        redis: Option<deadpool_redis::Pool>,
        settings: &Settings,
    ) -> Result<Self, LockError> {
        match (settings.job.lock_backend, redis) {
            (LockBackend::Postgres, _) => Ok(JobLock::postgres(pool)),
            (LockBackend::Redis, Some(redis)) => Ok(JobLock::redis(redis, pool)),
            (LockBackend::Redis, None) => Err(LockError::RedisNotConfigured),
        }
    }

    /// Takes the lock when it is free or expired, in one atomic step on the lock store's clock.
    pub async fn try_acquire(&self, spec: &LockSpec) -> Result<Acquired, LockError> {
        match self {
            JobLock::Postgres(lock) => lock.try_acquire(spec).await,
            JobLock::Redis(lock) => lock.try_acquire(spec).await,
        }
    }

    /// Pushes `locked_until` to the lock store's now() + `at_most_for`, only while `lease` is still
    /// the holder (owner and fencing token match and `locked_until > now()`), answering the
    /// renewed lease (its new `locked_until`), or `None` when the lease was lost.
    pub async fn renew(&self, lease: &Lease, at_most_for: Duration) -> Result<Option<Lease>, LockError> {
        match self {
            JobLock::Postgres(lock) => lock.renew(lease, at_most_for).await,
            JobLock::Redis(lock) => lock.renew(lease, at_most_for).await,
        }
    }

    /// Owner-checked release honouring `at_least_for`: `locked_until` becomes
    /// `greatest(now(), locked_at + at_least_for)`, never later than it was. `Ok(false)` when the
    /// lease is no longer the owner; then nothing changes.
    pub async fn release(&self, lease: &Lease, at_least_for: Duration) -> Result<bool, LockError> {
        match self {
            JobLock::Postgres(lock) => lock.release(lease, at_least_for).await,
            JobLock::Redis(lock) => lock.release(lease, at_least_for).await,
        }
    }

    /// Every task's lock, by task name.
    pub async fn list(&self) -> Result<Vec<Lock>, LockError> {
        match self {
            JobLock::Postgres(lock) => lock.list().await,
            JobLock::Redis(lock) => lock.list().await,
        }
    }
}

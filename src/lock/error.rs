//! Why the lock store could not answer.
//!
//! Every variant means the same thing to the job: the fire did not learn whether it may run, so
//! it is refused as unavailable ([`crate::jobs::Refused::Unavailable`]) and tried again later. The
//! variants exist for the people reading the attempt timeline and the logs: a Redis that does not
//! answer, a corrupt key and a configuration mistake need different fixes, so each keeps its cause
//! (the client's error as [`std::error::Error::source`], or what was read and why it is wrong).
//! Messages carry their cause's text too, as the recorded `detail` is the message alone.

use std::time::Duration;

use crate::domain::TaskName;

/// A lock operation that got no usable answer from its store.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// The pool gave no Redis connection (refused, unresolvable, or its own wait ran out).
    #[error("no Redis connection: {0}")]
    RedisConnection(#[from] deadpool_redis::PoolError),
    /// Redis answered a lock script with an error, or the connection broke mid-command.
    #[error("Redis command failed: {0}")]
    Redis(#[from] redis::RedisError),
    /// Redis did not finish one operation, connection included, within `after`: a hanging server
    /// or network. An acquisition cut off here may still have won; its key then simply expires.
    #[error("Redis did not answer within {after:?}")]
    Timeout { after: Duration },
    /// A statement on `task_lock` failed (the lock itself, or the Redis backend's published token).
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    /// Publishing a fencing token waited past the row wait for the `task_lock` row, which another
    /// transaction (a fenced settlement of the previous holder, normally) kept locked.
    #[error("the lock row of {task_name} stayed busy: {source}")]
    RowBusy {
        task_name: TaskName,
        #[source]
        source: sqlx::Error,
    },
    /// The `task_lock` row vanished between the attempt and the read of its holder. The service
    /// never deletes these rows; only someone editing the table by hand gets here.
    #[error("the lock row of {task_name} disappeared while reading its holder")]
    RowVanished { task_name: TaskName },
    /// The lock store holds something this service did not write: a Redis key edited by hand or
    /// by another program sharing the prefix, or a time no clock gives.
    #[error("the lock store holds a corrupt value {value:?}: {reason}")]
    Corrupt { value: String, reason: &'static str },
    /// A lease longer than the Redis backend can represent: a configuration mistake.
    #[error("a lease of {lease:?} is longer than the {max:?} the Redis lock accepts")]
    LeaseTooLong { lease: Duration, max: Duration },
    /// `FINESETTLE_LOCK_BACKEND=redis` without a Redis to hold the lock.
    #[error("FINESETTLE_LOCK_BACKEND=redis needs REDIS_URL")]
    RedisNotConfigured,
}

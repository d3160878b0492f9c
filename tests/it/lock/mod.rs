//! The job lock against the real database (and the real Redis): ShedLock's provider cases,
//! contention, fencing and lease renewal, each run on both backends, and the Redis backend's own.

/// Runs each listed case, an `async fn(Backend)`, once per backend: as `<module>::postgres::<case>`
/// and `<module>::redis::<case>`. An optional leading attribute replaces `#[tokio::test]`.
macro_rules! on_each_backend {
    (#[$test:meta] $($case:ident),+ $(,)?) => {
        mod postgres {
            $(
                #[$test]
                async fn $case() {
                    super::$case($crate::lock::backend::Backend::Postgres).await
                }
            )+
        }
        mod redis {
            $(
                #[$test]
                async fn $case() {
                    super::$case($crate::lock::backend::Backend::Redis).await
                }
            )+
        }
    };
    ($($case:ident),+ $(,)?) => {
        on_each_backend!(#[tokio::test] $($case),+);
    };
}

mod acquire;
mod backend;
mod conformance;
mod contention;
mod fence;
mod grant;
mod lease;
mod redis;
mod round_trips;

use std::time::Duration;

use chrono::{DateTime, Utc};
use finesettle::domain::{FencingToken, OwnerToken, TaskName};
use finesettle::lock::{Acquired, JobLock, Lease, LockSpec};
use sqlx::PgPool;

use crate::common::checks::eventually;

pub const TASK: TaskName = TaskName::from_static("settle-fines");
pub const MINUTE: Duration = Duration::from_secs(60);

/// A request for `task_name` by `instance_id`, held for ten minutes unless released, at least for
/// nothing.
pub fn spec(task_name: impl Into<TaskName>, instance_id: &str) -> LockSpec {
    LockSpec {
        task_name: task_name.into(),
        instance_id: instance_id.to_owned(),
        at_most_for: 10 * MINUTE,
        at_least_for: Duration::ZERO,
    }
}

#[track_caller]
pub fn won(acquired: Acquired) -> Lease {
    match acquired {
        Acquired::Won(lease) => lease,
        Acquired::Held { holder, locked_until } => {
            panic!("expected to win, but {holder} holds it until {locked_until}")
        }
    }
}

#[track_caller]
pub fn held_by(acquired: Acquired) -> (String, DateTime<Utc>) {
    match acquired {
        Acquired::Held { holder, locked_until } => (holder, locked_until),
        Acquired::Won(lease) => panic!("expected the lock to be held, but won {lease:?}"),
    }
}

/// Takes `spec` and panics unless won.
pub async fn acquire(lock: &JobLock, spec: &LockSpec) -> Lease {
    won(lock.try_acquire(spec).await.expect("lock store answers"))
}

/// The task's row as stored: (locked_by, owner_token, fencing_token, locked_at, locked_until).
pub async fn stored(
    pool: &PgPool,
    task_name: &TaskName,
) -> (String, OwnerToken, FencingToken, DateTime<Utc>, DateTime<Utc>) {
    sqlx::query_as(
        "select locked_by, owner_token, fencing_token, locked_at, locked_until from task_lock where task_name = $1",
    )
    .bind(task_name)
    .fetch_one(pool)
    .await
    .expect("the lock row exists")
}

/// Makes the task's lease expire now, as if its holder had crashed long ago.
pub async fn expire(pool: &PgPool, task_name: &TaskName) {
    sqlx::query("update task_lock set locked_until = now() - interval '1 second' where task_name = $1")
        .bind(task_name)
        .execute(pool)
        .await
        .expect("expire the lease");
}

/// The database clock.
pub async fn db_now(pool: &PgPool) -> DateTime<Utc> {
    sqlx::query_scalar("select now()").fetch_one(pool).await.unwrap()
}

/// A pool of its own on the test database, for tests that need many connections or close one.
pub async fn own_pool(app: &crate::common::TestApp, max_connections: u32) -> PgPool {
    sqlx::postgres::PgPoolOptions::new()
        .max_connections(max_connections)
        .connect(app.database.url())
        .await
        .expect("connect to the test database")
}

/// Waits until some session of this database waits for a lock: an acquisition or renewal queued
/// behind a transaction the test keeps open.
pub async fn wait_for_a_lock_waiter(pool: &PgPool) {
    eventually("a session to wait for a lock", Duration::from_secs(20), async || {
        sqlx::query_scalar(
            "select exists (select 1 from pg_stat_activity
                            where datname = current_database() and wait_event_type = 'Lock')",
        )
        .fetch_one(pool)
        .await
        .unwrap()
    })
    .await;
}

/// The database clock now (`clock_timestamp()`, not the transaction's start), on `conn`.
pub async fn db_clock(conn: &mut sqlx::PgConnection) -> DateTime<Utc> {
    sqlx::query_scalar("select clock_timestamp()")
        .fetch_one(conn)
        .await
        .unwrap()
}

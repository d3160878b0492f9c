//! The lock under test, on each backend, and what its store holds.
//!
//! The provider cases take a [`Backend`] and run once per backend (see `on_each_backend!`), so
//! both backends are held to the same contract: the Postgres lock in `task_lock`, and the Redis
//! lock in a Redis database leased by the test (see `common::redis`) under a key prefix of its own,
//! publishing its tokens to the test's PostgreSQL database.

use std::time::Duration;

use chrono::{DateTime, Utc};
use deadpool_redis::Pool;
use finesettle::domain::{FencingToken, OwnerToken, TaskName};
use finesettle::lock::{JobLock, PgLock, RedisLock};
use sqlx::PgPool;
use uuid::Uuid;

use crate::common::redis::TestRedis;
use crate::common::{TestApp, spawn_app};

/// What the store holds for a task: (locked_by, owner_token, fencing_token, locked_at,
/// locked_until), as in `task_lock`.
pub type Stored = (String, OwnerToken, FencingToken, DateTime<Utc>, DateTime<Utc>);

#[derive(Debug, Clone, Copy)]
pub enum Backend {
    Postgres,
    Redis,
}

/// A running app (for its database) and the lock under test on `backend`.
pub struct Fixture {
    pub lock: JobLock,
    redis: Option<RedisSide>,
    // Dropped last: drops the database.
    pub app: TestApp,
}

struct RedisSide {
    pool: Pool,
    prefix: String,
    // Dropped last: empties and releases the Redis database.
    server: TestRedis,
}

/// A store the test may make unreachable: the one the lock lives in.
pub enum OwnStore {
    Postgres(PgPool),
    Redis(Pool),
}

impl OwnStore {
    pub async fn close(&self) {
        match self {
            OwnStore::Postgres(pool) => pool.close().await,
            OwnStore::Redis(pool) => pool.close(),
        }
    }
}

impl Fixture {
    pub async fn new(backend: Backend) -> Self {
        let app = spawn_app().await;
        let redis = match backend {
            Backend::Postgres => None,
            Backend::Redis => {
                let server = TestRedis::create().await;
                Some(RedisSide {
                    pool: server.pool(),
                    prefix: format!("finesettle:test:{}:lock", Uuid::new_v4().simple()),
                    server,
                })
            }
        };
        let mut fixture = Fixture {
            lock: JobLock::postgres(app.pool.clone()),
            redis,
            app,
        };
        if let Some(redis) = &fixture.redis {
            fixture.lock = JobLock::Redis(fixture.redis_lock(redis.pool.clone(), fixture.app.pool.clone()));
        }
        fixture
    }

    pub fn pool(&self) -> &PgPool {
        &self.app.pool
    }

    /// The lock under test, waiting at most `wait` for a busy `task_lock` row (to take it over with
    /// Postgres, to publish the token with Redis).
    pub fn lock_with_row_wait(&self, wait: Duration) -> JobLock {
        match &self.redis {
            None => JobLock::Postgres(PgLock::new(self.app.pool.clone()).with_row_wait(wait)),
            Some(redis) => JobLock::Redis(
                self.redis_lock(redis.pool.clone(), self.app.pool.clone())
                    .with_row_wait(wait),
            ),
        }
    }

    /// The lock under test on connections of its own (`max_connections` to PostgreSQL), and the
    /// store it lives in, which the test may close.
    pub async fn lock_on_own_store(&self, max_connections: u32) -> (JobLock, OwnStore) {
        let pool = crate::lock::own_pool(&self.app, max_connections).await;
        match &self.redis {
            None => (JobLock::postgres(pool.clone()), OwnStore::Postgres(pool)),
            Some(redis) => {
                let own = redis.server.pool();
                (JobLock::Redis(self.redis_lock(own.clone(), pool)), OwnStore::Redis(own))
            }
        }
    }

    /// What the store holds for `task_name`; panics when it holds nothing.
    pub async fn stored(&self, task_name: &TaskName) -> Stored {
        self.try_stored(task_name).await.expect("the store holds the lock")
    }

    /// What the store holds for `task_name`: the `task_lock` row, or the Redis key with its expiry
    /// (`None` once it expired or was deleted).
    pub async fn try_stored(&self, task_name: &TaskName) -> Option<Stored> {
        let Some(redis) = &self.redis else {
            return Some(crate::lock::stored(&self.app.pool, task_name).await);
        };
        let mut conn = redis.pool.get().await.expect("a Redis connection");
        let key = self.key(task_name);
        let value: Option<String> = redis::cmd("GET").arg(&key).query_async(&mut conn).await.unwrap();
        let expires: i64 = redis::cmd("PEXPIRETIME")
            .arg(&key)
            .query_async(&mut conn)
            .await
            .unwrap();
        let value = value?;
        let mut parts = value.splitn(4, ':');
        let owner_token = OwnerToken(parts.next().unwrap().parse().expect("an owner token"));
        let fencing_token = FencingToken(parts.next().unwrap().parse().expect("a fencing token"));
        let locked_at = parts.next().unwrap().parse().expect("locked_at in ms");
        let locked_by = parts.next().expect("a holder").to_owned();
        let millis = |ms| DateTime::from_timestamp_millis(ms).unwrap();
        Some((
            locked_by,
            owner_token,
            fencing_token,
            millis(locked_at),
            millis(expires),
        ))
    }

    /// How much of the task's lease is left now by the store's clock: `locked_until` less
    /// `clock_timestamp()` in PostgreSQL, the key's `PTTL` in Redis.
    pub async fn remaining(&self, task_name: &TaskName) -> chrono::Duration {
        let millis: i64 = match &self.redis {
            None => sqlx::query_scalar(
                "select (extract(epoch from locked_until - clock_timestamp()) * 1000)::bigint
                 from task_lock where task_name = $1",
            )
            .bind(task_name)
            .fetch_one(&self.app.pool)
            .await
            .expect("the lock row exists"),
            Some(redis) => {
                let mut conn = redis.pool.get().await.expect("a Redis connection");
                redis::cmd("PTTL")
                    .arg(self.key(task_name))
                    .query_async(&mut conn)
                    .await
                    .unwrap()
            }
        };
        chrono::Duration::milliseconds(millis)
    }

    /// Makes the task's lease expire now, as if its holder had crashed long ago.
    pub async fn expire(&self, task_name: &TaskName) {
        let Some(redis) = &self.redis else {
            return crate::lock::expire(&self.app.pool, task_name).await;
        };
        let mut conn = redis.pool.get().await.expect("a Redis connection");
        let () = redis::cmd("DEL")
            .arg(self.key(task_name))
            .query_async(&mut conn)
            .await
            .unwrap();
        // Redis keeps time in milliseconds: let one pass, so that the next acquisition is at a
        // later instant, as it would be after a real expiry.
        tokio::time::sleep(Duration::from_millis(2)).await;
    }

    /// The Redis backend of the fixture, if that is the one under test.
    pub fn redis(&self) -> Option<(&RedisLock, &Pool)> {
        match (&self.lock, &self.redis) {
            (JobLock::Redis(lock), Some(redis)) => Some((lock, &redis.pool)),
            _ => None,
        }
    }

    fn key(&self, task_name: &TaskName) -> String {
        self.redis().expect("the Redis backend").0.lock_key(task_name)
    }

    fn redis_lock(&self, redis: Pool, pool: PgPool) -> RedisLock {
        let prefix = &self.redis.as_ref().expect("the Redis backend").prefix;
        RedisLock::new(redis, pool).with_key_prefix(prefix)
    }
}

//! The job lock in Redis (`FINESETTLE_LOCK_BACKEND=redis`), with its fencing token published to
//! PostgreSQL before the winner writes anything.
//!
//! # In Redis
//!
//! One key per task, `{prefix}:{<task>}`, taken with `SET key value NX PX ttl` and holding
//! `<owner token>:<fencing token>:<locked_at ms>:<holder>`; a counter per task,
//! `{prefix}:fencing:{<task>}`, never expires. Every step is one Lua script (run by `EVALSHA`
//! through [`redis::Script`]), so no other client runs between its reads and writes:
//!
//! - **acquire**: if the key is free, `INCR` the counter and `SET` the key in the same step, so
//!   taking the lock and numbering it cannot be separated; otherwise answer the holder and the
//!   key's expiry;
//! - **grant**: once the winner's token is published, compare-and-restart: the same value with
//!   `locked_at` set to now and a fresh TTL, so the lease counts from the completed grant (see
//!   [`RedisLock::try_acquire`]);
//! - **renew**: compare-and-extend, `PEXPIRE` only while the key still holds this acquisition's
//!   exact value;
//! - **release**: compare-and-delete honouring `at_least_for`: by the Redis clock (`TIME` inside
//!   the script), keep the key until `locked_at + at_least_for` when that is still ahead (never
//!   later than it already expires), delete it otherwise.
//!
//! Times are the Redis server's, never this process's: `locked_at` comes from `TIME`, expiries
//! from `PEXPIRETIME`, so two replicas with skewed clocks agree on who holds the lock and until
//! when. `PEXPIRETIME` needs Redis 7.0 or newer. The hash tag (`{<task>}`) keeps both keys of a
//! task in one Redis Cluster slot, as a script touching both requires.
//!
//! # Why the token is published to PostgreSQL
//!
//! A Redis lock alone cannot keep a paused holder from writing (Martin Kleppmann, "How to do
//! distributed locking", 2016). The key's TTL runs on Redis's clock, which the holder cannot see:
//! a holder paused by a GC, `SIGSTOP` or a migrated VM past its TTL wakes up believing it still
//! holds the lock, while another replica took it over. Checking before writing does not help (the
//! pause can come between the check and the write), and a Redis failover or restart can lose the
//! key altogether (replication is asynchronous), handing the lock to a second holder at once.
//! Only the store that receives the writes can refuse the stale ones, so every settlement
//! transaction opens with [`super::fence::guard`], which checks `task_lock.fencing_token` in
//! PostgreSQL, exactly as with the Postgres backend.
//!
//! The winner therefore publishes its token to `task_lock` right after winning in Redis and before
//! any settlement write, and only a *newer* token replaces the published one. A winner paused
//! between its Redis win and its publish, publishing after a later winner, changes nothing and
//! learns that it lost; its writes would be fenced anyway. A publish that waits on the row (a
//! previous holder's fenced transaction still running) is bounded by a row wait, after which the
//! winner gives its Redis key back and reports the lock as held, as the Postgres backend does.
//! A publish that completed restarts the lease (the grant script), since only then may the winner
//! write: the Redis lease, like the Postgres one, lasts `at_most_for` from the completed grant.
//!
//! The counter may go backwards when Redis loses data (a flush, a restart without persistence, a
//! failover to a replica that lagged). Then a fresh token would not be newer than the published
//! one and every publish would be refused until the counter caught up. So each acquisition passes
//! the published token as a floor and the script numbers the acquisition above it: the published
//! token, not Redis, is the lasting record. A PostgreSQL promotion may lose that record too (an
//! asynchronous standby lacking the last publishes); the floor is then the new timeline's, as for
//! the PostgreSQL backend (`(timeline - 1) << 32`, see [`super::postgres`]), so even a Redis that
//! lost its counter at the same time numbers above every token of the old timeline.
//!
//! Renewals stay in Redis and do not push `task_lock.locked_until`: the lease then lives in one
//! store only, and its survival does not depend on PostgreSQL answering. [`RedisLock::list`] reads live holders and expiries from Redis
//! instead, and a release records its end in `task_lock` so that the admin view stays truthful.
//!
//! # Failures
//!
//! Every Redis call runs within [`OP_TIMEOUT`] on the pool of [`crate::store::redis::pool`]
//! (which bounds waiting for, creating and recycling connections); an unreachable Redis is
//! [`LockError::RedisConnection`] or [`LockError::Redis`], a hanging one [`LockError::Timeout`],
//! a key this service did not write [`LockError::Corrupt`]. The job logs, counts and treats each
//! as "not acquired". An acquisition that times out may still have won in Redis: its key then
//! simply expires, as a crashed holder's would, and its token was never published.
//!
//! The PostgreSQL side (publishing, recording a release's end, reading the rows) is
//! [`super::postgres::TokenRecord`]: this file talks to Redis only.

use std::sync::LazyLock;
use std::time::Duration;

use chrono::{DateTime, Utc};
use deadpool_redis::{Connection, Pool};
use redis::Script;
use sqlx::PgPool;
use tokio::time::Instant;
use uuid::Uuid;

use super::postgres::TokenRecord;
use super::{Acquired, Lease, Lock, LockError, LockSpec, won};
use crate::domain::{FencingToken, OwnerToken, TaskName};

/// The key prefix the service uses. Tests pick their own to stay apart.
pub const DEFAULT_PREFIX: &str = "finesettle:lock";

/// The longest one Redis operation may take, connection included, before it counts as Redis being
/// unavailable. The pool waits at most 2 s for a connection and the client 500 ms per reply; this
/// bounds the sum.
pub const OP_TIMEOUT: Duration = Duration::from_secs(3);

/// How long a publish waits for the `task_lock` row while another transaction has it locked
/// (the previous holder's fenced transaction, normally short).
pub const DEFAULT_ROW_WAIT: Duration = Duration::from_secs(2);

/// The longest lease accepted. Anything longer is a configuration mistake; refusing it here keeps
/// every expiry within what Redis and `chrono` can represent.
pub const MAX_LEASE: Duration = Duration::from_secs(100 * 366 * 24 * 3600);

/// Takes the lock if the key is free. Answers `{1, value, expiry}` when taken, `{0, value of the
/// holder, expiry}` when held (expiries in ms since the epoch, by the Redis clock).
///
/// KEYS: lock, fencing counter. ARGV: owner token, holder, ttl ms, published token (the floor).
const ACQUIRE: &str = r"
local held = redis.call('GET', KEYS[1])
if held then
    return {0, held, redis.call('PEXPIRETIME', KEYS[1])}
end
local floor = tonumber(ARGV[4])
local token = redis.call('INCR', KEYS[2])
if token <= floor then
    -- Redis lost the counter: number above the token already published to PostgreSQL
    token = floor + 1
    redis.call('SET', KEYS[2], string.format('%d', token))
end
local now = redis.call('TIME')
local locked_at = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local value = ARGV[1] .. ':' .. string.format('%d', token) .. ':' .. string.format('%d', locked_at) .. ':' .. ARGV[2]
-- the expiry counts from locked_at itself: PX would count from a later millisecond
redis.call('SET', KEYS[1], value, 'NX', 'PXAT', string.format('%d', locked_at + tonumber(ARGV[3])))
return {1, value, redis.call('PEXPIRETIME', KEYS[1])}
";

/// Compare-and-extend: the new expiry when the key still holds ARGV[1], nil otherwise.
///
/// KEYS: lock. ARGV: the acquisition's value, ttl ms.
const RENEW: &str = r"
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
    return false
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return redis.call('PEXPIRETIME', KEYS[1])
";

/// Compare-and-restart, for a won acquisition once its token is published: while the key still
/// holds ARGV[1], the same value with `locked_at` set to now by the Redis clock and a fresh TTL.
/// Answers `{value, expiry}`, or nil when the key no longer holds ARGV[1].
///
/// KEYS: lock. ARGV: the acquisition's value, ttl ms.
const GRANT: &str = r"
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
    return false
end
local owner, token, holder = string.match(ARGV[1], '^([^:]*):([^:]*):[^:]*:(.*)$')
local now = redis.call('TIME')
local locked_at = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local value = owner .. ':' .. token .. ':' .. string.format('%d', locked_at) .. ':' .. holder
redis.call('SET', KEYS[1], value, 'XX', 'PXAT', string.format('%d', locked_at + tonumber(ARGV[2])))
return {value, redis.call('PEXPIRETIME', KEYS[1])}
";

/// Compare-and-delete honouring `at_least_for`: nil when the key does not hold ARGV[1]; otherwise
/// the instant the lock now ends (ms since the epoch, by the Redis clock).
///
/// KEYS: lock. ARGV: the acquisition's value, its locked_at ms, at_least_for ms.
const RELEASE: &str = r"
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
    return false
end
local now = redis.call('TIME')
now = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local keep_until = tonumber(ARGV[2]) + tonumber(ARGV[3])
if keep_until <= now then
    redis.call('DEL', KEYS[1])
    return now
end
local expires = redis.call('PEXPIRETIME', KEYS[1])
if keep_until < expires then
    redis.call('PEXPIREAT', KEYS[1], string.format('%d', keep_until))
    return keep_until
end
return expires
";

/// The key's value and expiry, read together; nil when free.
///
/// KEYS: lock.
const PEEK: &str = r"
local value = redis.call('GET', KEYS[1])
if not value then
    return false
end
return {value, redis.call('PEXPIRETIME', KEYS[1])}
";

static ACQUIRE_SCRIPT: LazyLock<Script> = LazyLock::new(|| Script::new(ACQUIRE));
static RENEW_SCRIPT: LazyLock<Script> = LazyLock::new(|| Script::new(RENEW));
static GRANT_SCRIPT: LazyLock<Script> = LazyLock::new(|| Script::new(GRANT));
static RELEASE_SCRIPT: LazyLock<Script> = LazyLock::new(|| Script::new(RELEASE));
static PEEK_SCRIPT: LazyLock<Script> = LazyLock::new(|| Script::new(PEEK));

/// The Redis backend. Cheap to clone.
#[derive(Clone)]
pub struct RedisLock {
    redis: Pool,
    /// Where the fencing token is published and checked.
    record: TokenRecord,
    prefix: String,
}

impl std::fmt::Debug for RedisLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisLock")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

impl RedisLock {
    /// The lock in `redis`, publishing fencing tokens to `task_lock` in `pool`.
    pub fn new(redis: Pool, pool: PgPool) -> Self {
        RedisLock {
            redis,
            record: TokenRecord::new(pool, DEFAULT_ROW_WAIT),
            prefix: DEFAULT_PREFIX.to_owned(),
        }
    }

    /// The same lock under other keys.
    pub fn with_key_prefix(mut self, prefix: &str) -> Self {
        self.prefix = prefix.to_owned();
        self
    }

    /// The same lock, waiting at most `wait` for a busy `task_lock` row when publishing.
    pub fn with_row_wait(mut self, wait: Duration) -> Self {
        self.record = self.record.with_row_wait(wait);
        self
    }

    /// The key holding the lock of `task_name`.
    pub fn lock_key(&self, task_name: &TaskName) -> String {
        lock_key(&self.prefix, task_name.as_str())
    }

    /// The counter numbering the acquisitions of `task_name`.
    pub fn fencing_key(&self, task_name: &TaskName) -> String {
        fencing_key(&self.prefix, task_name.as_str())
    }

    /// Takes the lock in Redis when free, publishes the token to `task_lock`, then restarts the
    /// lease from that moment (`grant` says why). Held in Redis, or a newer token
    /// already published: [`Acquired::Held`].
    pub async fn try_acquire(&self, spec: &LockSpec) -> Result<Acquired, LockError> {
        let asked_at = Instant::now();
        let ttl = lease_millis(spec.at_most_for)?;
        let floor = self.record.published_token(&spec.task_name).await?;
        let owner = OwnerToken::random();
        let mut invocation = ACQUIRE_SCRIPT.prepare_invoke();
        invocation
            .key(self.lock_key(&spec.task_name))
            .key(self.fencing_key(&spec.task_name))
            .arg(owner.to_string())
            .arg(&spec.instance_id)
            .arg(ttl)
            .arg(floor.0);
        let (won, value, expires): (i64, String, i64) =
            self.run(async |conn| invocation.invoke_async(conn).await).await?;
        let holding = Holding::parse(&value)?;
        let locked_until = from_millis(expires)?;
        if won == 0 {
            return Ok(Acquired::Held {
                holder: holding.holder,
                locked_until,
            });
        }
        let lease = holding.into_lease(&spec.task_name, locked_until, asked_at)?;
        match self.record.publish(&lease).await {
            Ok(true) => self.grant(lease, ttl).await,
            Ok(false) => {
                tracing::warn!(
                    task.name = %lease.task_name,
                    fencing_token = lease.fencing_token.0,
                    "a newer fencing token is already published; giving the Redis lock back"
                );
                self.give_back(&lease).await;
                self.record.holder(&lease.task_name).await
            }
            Err(LockError::RowBusy { .. }) => {
                tracing::warn!(task.name = %lease.task_name, "lock row busy; giving the Redis lock back");
                self.give_back(&lease).await;
                self.record.holder(&lease.task_name).await
            }
            Err(e) => {
                self.give_back(&lease).await;
                Err(e)
            }
        }
    }

    /// Restarts the lease of `won`, whose token is now published, from this moment by the Redis
    /// clock: `locked_at` becomes now and the key expires `ttl` ms later, and the row records it.
    ///
    /// Why: the lease started in the acquire script, but the winner may not write before its token
    /// is published, and the publish may wait on the `task_lock` row behind the previous holder's
    /// fenced transaction, up to the row wait, while the key's TTL ticks. Without the restart a
    /// winner that waited 4 s for a 5 s lease would hold it 1 s. A key that no longer holds `won`
    /// (its TTL ran out during that wait) is a lease lost at once: reported as held until then,
    /// so the fire tries again.
    async fn grant(&self, won: Lease, ttl: i64) -> Result<Acquired, LockError> {
        let mut invocation = GRANT_SCRIPT.prepare_invoke();
        invocation
            .key(self.lock_key(&won.task_name))
            .arg(Holding::value_of(&won))
            .arg(ttl);
        let granted: Option<(String, i64)> = self.run(async |conn| invocation.invoke_async(conn).await).await?;
        let Some((value, expires)) = granted else {
            tracing::warn!(
                task.name = %won.task_name,
                fencing_token = won.fencing_token.0,
                "the Redis lease ran out while its token was being published"
            );
            return Ok(Acquired::Held {
                holder: won.locked_by,
                locked_until: won.locked_until,
            });
        };
        let lease = Holding::parse(&value)?.into_lease(&won.task_name, from_millis(expires)?, won.asked_at)?;
        if let Err(error) = self.record.record_grant(&lease).await {
            tracing::warn!(
                task.name = %lease.task_name,
                fencing_token = lease.fencing_token.0,
                %error,
                "lock granted, but its times could not be recorded in task_lock"
            );
        }
        Ok(won!(lease, "lock acquired in Redis and its token published"))
    }

    /// Makes `lease.fencing_token` the task's current token in `task_lock`, unless a newer one is
    /// there already: `Ok(false)` then, and nothing changed. [`RedisLock::try_acquire`] calls it
    /// right after winning; calling it again later (a winner resuming after a pause) is harmless.
    /// [`LockError::RowBusy`] when the row stayed locked past the row wait.
    pub async fn publish(&self, lease: &Lease) -> Result<bool, LockError> {
        self.record.publish(lease).await
    }

    /// Compare-and-extend in Redis: the key's expiry becomes the Redis clock's now + `at_most_for`
    /// while it still holds this acquisition. `None`: lost (expired, or taken over).
    pub async fn renew(&self, lease: &Lease, at_most_for: Duration) -> Result<Option<Lease>, LockError> {
        let ttl = lease_millis(at_most_for)?;
        let mut invocation = RENEW_SCRIPT.prepare_invoke();
        invocation
            .key(self.lock_key(&lease.task_name))
            .arg(Holding::value_of(lease))
            .arg(ttl);
        let expires: Option<i64> = self.run(async |conn| invocation.invoke_async(conn).await).await?;
        expires
            .map(|ms| {
                Ok(Lease {
                    locked_until: from_millis(ms)?,
                    ..lease.clone()
                })
            })
            .transpose()
    }

    /// Compare-and-delete honouring `at_least_for` (see the module docs); `Ok(false)` when the key
    /// no longer holds this acquisition, and then nothing changes. The end of the lock is recorded
    /// in `task_lock` for the admin view; failing that is only logged, as the lock itself is free.
    pub async fn release(&self, lease: &Lease, at_least_for: Duration) -> Result<bool, LockError> {
        let at_least = millis(at_least_for.min(MAX_LEASE));
        let mut invocation = RELEASE_SCRIPT.prepare_invoke();
        invocation
            .key(self.lock_key(&lease.task_name))
            .arg(Holding::value_of(lease))
            .arg(lease.locked_at.timestamp_millis())
            .arg(at_least);
        let ends: Option<i64> = self.run(async |conn| invocation.invoke_async(conn).await).await?;
        let Some(ends) = ends else { return Ok(false) };
        if let Err(error) = self.record.record_end(lease, from_millis(ends)?).await {
            tracing::warn!(
                task.name = %lease.task_name,
                fencing_token = lease.fencing_token.0,
                %error,
                "released in Redis, but the end could not be recorded in task_lock"
            );
        }
        Ok(true)
    }

    /// Every task that was ever locked (the `task_lock` rows), with the live holder and expiry
    /// from Redis where the key is present.
    pub async fn list(&self) -> Result<Vec<Lock>, LockError> {
        let rows = self.record.rows().await?;
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        let keys: Vec<String> = rows.iter().map(|row| self.lock_key(&row.task_name)).collect();
        let live: Vec<Option<(String, i64)>> = self
            .run(async |conn| {
                let mut live = Vec::with_capacity(keys.len());
                for key in &keys {
                    live.push(PEEK_SCRIPT.key(key).invoke_async(conn).await?);
                }
                Ok(live)
            })
            .await?;
        rows.into_iter()
            .zip(live)
            .map(|(row, live)| match live {
                Some((value, expires)) => {
                    let holding = Holding::parse(&value)?;
                    Ok(Lock {
                        task_name: row.task_name,
                        locked_by: holding.holder,
                        locked_at: from_millis(holding.locked_at_ms)?,
                        locked_until: from_millis(expires)?,
                        fencing_token: FencingToken(holding.fencing_token),
                        held: true,
                    })
                }
                None => Ok(Lock {
                    task_name: row.task_name,
                    locked_by: row.locked_by,
                    locked_at: row.locked_at,
                    locked_until: row.locked_until,
                    fencing_token: row.fencing_token,
                    held: false,
                }),
            })
            .collect()
    }

    /// Deletes the key if it still holds `lease`, so that the next attempt need not wait for a
    /// lease whose token was never published. A failure only delays the next holder to the TTL.
    async fn give_back(&self, lease: &Lease) {
        if let Err(error) = self.release(lease, Duration::ZERO).await {
            tracing::warn!(task.name = %lease.task_name, %error, "could not give the Redis lock back; it will expire");
        }
    }

    /// Runs one Redis operation on a pooled connection within [`OP_TIMEOUT`].
    async fn run<T>(&self, op: impl AsyncFnOnce(&mut Connection) -> redis::RedisResult<T>) -> Result<T, LockError> {
        let attempt = async {
            let mut conn = self.redis.get().await?;
            Ok(op(&mut conn).await?)
        };
        tokio::time::timeout(OP_TIMEOUT, attempt)
            .await
            .unwrap_or(Err(LockError::Timeout { after: OP_TIMEOUT }))
    }
}

/// What the lock key holds: `<owner token>:<fencing token>:<locked_at ms>:<holder>` (the holder
/// last, as an instance id may contain colons).
#[derive(Debug, PartialEq, Eq)]
struct Holding {
    owner_token: Uuid,
    fencing_token: i64,
    locked_at_ms: i64,
    holder: String,
}

impl Holding {
    /// The value the acquisition of `lease` stored: what release and renewal compare against.
    fn value_of(lease: &Lease) -> String {
        format!(
            "{}:{}:{}:{}",
            lease.owner_token,
            lease.fencing_token,
            lease.locked_at.timestamp_millis(),
            lease.locked_by
        )
    }

    /// Reads a value back; [`LockError::Corrupt`], naming the first part that is wrong, when this
    /// service did not write it.
    fn parse(value: &str) -> Result<Self, LockError> {
        let corrupt = |reason| LockError::Corrupt {
            value: value.to_owned(),
            reason,
        };
        let mut parts = value.splitn(4, ':');
        let mut next = || {
            parts
                .next()
                .ok_or_else(|| corrupt("fewer than four ':'-separated parts"))
        };
        Ok(Holding {
            owner_token: next()?.parse().map_err(|_| corrupt("the owner token is not a UUID"))?,
            fencing_token: next()?
                .parse()
                .map_err(|_| corrupt("the fencing token is not an integer"))?,
            locked_at_ms: next()?
                .parse()
                .map_err(|_| corrupt("locked_at is not an integer of milliseconds"))?,
            holder: next()?.to_owned(),
        })
    }

    fn into_lease(
        self,
        task_name: &TaskName,
        locked_until: DateTime<Utc>,
        asked_at: Instant,
    ) -> Result<Lease, LockError> {
        Ok(Lease {
            task_name: task_name.clone(),
            locked_by: self.holder,
            owner_token: OwnerToken(self.owner_token),
            fencing_token: FencingToken(self.fencing_token),
            locked_at: from_millis(self.locked_at_ms)?,
            locked_until,
            asked_at,
        })
    }
}

/// `{prefix}:{<task>}`: the braces are a Redis Cluster hash tag, shared with [`fencing_key`].
fn lock_key(prefix: &str, task_name: &str) -> String {
    format!("{prefix}:{{{task_name}}}")
}

fn fencing_key(prefix: &str, task_name: &str) -> String {
    format!("{prefix}:fencing:{{{task_name}}}")
}

/// A lease length in whole milliseconds, at least 1 (Redis refuses `PX 0`), at most [`MAX_LEASE`].
fn lease_millis(d: Duration) -> Result<i64, LockError> {
    if d > MAX_LEASE {
        return Err(LockError::LeaseTooLong {
            lease: d,
            max: MAX_LEASE,
        });
    }
    Ok(millis(d).max(1))
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// A time Redis answered (`TIME`, `PEXPIRETIME`, or `locked_at` read back from a key), in ms since
/// the epoch. Not positive (`PEXPIRETIME` answers -1 for a key without expiry, which this service
/// never sets) or out of `chrono`'s range: [`LockError::Corrupt`].
fn from_millis(ms: i64) -> Result<DateTime<Utc>, LockError> {
    DateTime::from_timestamp_millis(ms)
        .filter(|_| ms > 0)
        .ok_or_else(|| LockError::Corrupt {
            value: ms.to_string(),
            reason: "not a time in milliseconds since the epoch",
        })
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    fn lease() -> Lease {
        let locked_at = Utc.with_ymd_and_hms(2026, 12, 2, 18, 0, 0).unwrap();
        Lease {
            task_name: TaskName::from_static("settle-fines"),
            locked_by: "host:1234".into(),
            owner_token: OwnerToken(Uuid::from_u128(7)),
            fencing_token: FencingToken(42),
            locked_at,
            locked_until: locked_at + chrono::Duration::minutes(15),
            asked_at: Instant::now(),
        }
    }

    #[test]
    fn the_value_names_owner_token_time_and_holder_and_reads_back() {
        let lease = lease();
        let value = Holding::value_of(&lease);
        assert_eq!(
            value,
            format!(
                "00000000-0000-0000-0000-000000000007:42:{}:host:1234",
                lease.locked_at.timestamp_millis()
            )
        );
        let read = Holding::parse(&value)
            .unwrap()
            .into_lease(
                &TaskName::from_static("settle-fines"),
                lease.locked_until,
                lease.asked_at,
            )
            .unwrap();
        assert_eq!(read, lease);
    }

    #[test]
    fn a_foreign_value_is_an_error_naming_what_was_read_and_why() {
        for (value, why) in [
            ("", "the owner token is not a UUID"),
            ("x", "the owner token is not a UUID"),
            ("not-a-uuid:1:2:h", "the owner token is not a UUID"),
            (
                "00000000-0000-0000-0000-000000000007:one:2:h",
                "the fencing token is not an integer",
            ),
            (
                "00000000-0000-0000-0000-000000000007:1:noon:h",
                "locked_at is not an integer",
            ),
            ("00000000-0000-0000-0000-000000000007:1:2", "fewer than four"),
        ] {
            match Holding::parse(value) {
                Err(LockError::Corrupt { value: read, reason }) => {
                    assert_eq!(read, value);
                    assert!(reason.starts_with(why), "{value}: {reason}");
                }
                other => panic!("{value}: {other:?}"),
            }
        }
        let message = Holding::parse("x").unwrap_err().to_string();
        assert_eq!(
            message,
            r#"the lock store holds a corrupt value "x": the owner token is not a UUID"#
        );
    }

    #[test]
    fn an_impossible_time_is_a_corrupt_value() {
        assert!(matches!(from_millis(-1), Err(LockError::Corrupt { value, .. }) if value == "-1"));
        assert!(matches!(from_millis(i64::MAX), Err(LockError::Corrupt { .. })));
        assert!(from_millis(1).is_ok());
    }

    #[test]
    fn both_keys_of_a_task_share_a_cluster_slot() {
        assert_eq!(
            lock_key(DEFAULT_PREFIX, "settle-fines"),
            "finesettle:lock:{settle-fines}"
        );
        assert_eq!(
            fencing_key(DEFAULT_PREFIX, "settle-fines"),
            "finesettle:lock:fencing:{settle-fines}"
        );
    }

    #[test]
    fn leases_are_whole_milliseconds_within_bounds() {
        assert_eq!(lease_millis(Duration::from_secs(90)).unwrap(), 90_000);
        assert_eq!(lease_millis(Duration::ZERO).unwrap(), 1);
        assert!(lease_millis(MAX_LEASE).is_ok());
        assert!(matches!(
            lease_millis(Duration::MAX),
            Err(LockError::LeaseTooLong { .. })
        ));
    }
}

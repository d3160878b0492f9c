//! The job lock in PostgreSQL: one `task_lock` row per task, ShedLock's design plus a fresh owner
//! token per acquisition and a fencing token.
//!
//! Every time is the database's clock, never this process's: replicas whose clocks disagree still
//! agree on who holds the lock and until when (ShedLock's duplicate runs under clock skew come from
//! comparing times taken on different machines).
//!
//! Taking the lock is one statement, sent and committed on its own: one round trip and one WAL
//! flush, as the release is (`load/bench-lock` holds a lock cycle to two durable commits). It
//! first reads the row in its snapshot, without waiting for any lock: a live holder makes it write
//! nothing. Only a row that is missing or expired is then inserted, or taken over where
//! `locked_until < clock_timestamp()`, bumping `fencing_token`. Two replicas racing on it are
//! serialised by the row (or the primary key while the row is being inserted): the second one
//! re-checks the condition against the first one's committed row and finds it held. An attempt
//! that wrote nothing reads the holder in a second statement, so that the winner's statement is a
//! plain `insert` (a `union` answering the holder in the same statement cost the winner more).
//!
//! # Which clock reading
//!
//! A statement may wait for the row: a takeover waits for the previous holder's fenced
//! transaction ([`super::fence`]), a renewal for another writer. A lease must count from the end
//! of that wait, when the lock was actually granted, or a taker that waited 4 s for a 5 s lease
//! holds it 1 s. `now()` is the start of the transaction, so every time here is
//! `clock_timestamp()`, read where PostgreSQL evaluates it after taking the row lock:
//!
//! - in `insert ... on conflict do update`, the conflicting row is locked first; the `where` and
//!   the `set` of the `do update` are evaluated after. `excluded.*` are not: they were computed
//!   from the inserted row before the wait, so the takeover reads the clock in its `set`;
//! - in a plain `update`, the new row's values are computed *before* waiting for a row locked by
//!   another transaction, and only recomputed when that transaction changed the row. So the
//!   renewal, which lengthens the lease, locks the row in a CTE (`for no key update`, which the
//!   fence lets through) and reads the clock in the update that joins it. The release is a plain
//!   update: it only shortens the lease, and a clock read before the wait frees the lock at the
//!   same moment as one read after it, the release's commit.
//!
//! # Tokens carry the timeline
//!
//! A promotion of an asynchronous standby may lose the tail of the old primary's WAL, and with it
//! the last acquisitions: the counter goes back (17 to 1, once) and the next takers would get
//! tokens the old timeline already issued, which a holder paused on the old timeline would pass
//! the fence with. So a token is never below `((timeline - 1) << 32) + 1`, the timeline being the
//! one PostgreSQL is writing WAL on: every promotion starts a timeline, and every token of timeline
//! `t` (fewer than 2^32 acquisitions) lies below the first token of `t + 1`. On timeline 1 the
//! floor is 1, which the counter starts at anyway: tokens stay 1, 2, 3...
//!
//! The Redis backend's statements live here too ([`TokenRecord`]): it holds its lease in Redis but
//! publishes its fencing token to the same `task_lock` row, which the fence checks.

use std::time::Duration;

use super::{Acquired, Lease, Lock, LockError, LockSpec, won};
use crate::domain::{FencingToken, OwnerToken, TaskName};
use chrono::{DateTime, Utc};
use sqlx::PgPool;
use sqlx::postgres::types::PgInterval;
use tokio::time::Instant;

/// How long an acquisition waits for the lock row when another transaction has it locked.
///
/// An attempt on a live lock does not wait: its snapshot shows the holder, so it writes nothing.
/// A takeover of an expired lock does, for the fence's key-share lock that the old holder's
/// settlement transactions keep until they end (the takeover is a key update: it changes the
/// tokens), and for acquisitions in flight. That wait is the fence working. Rather than hang behind a holder
/// stuck in its transaction (paused mid-transaction, say), the attempt gives up after this wait
/// and reports the lock as held, which it is until that transaction ends; a scheduled fire tries
/// again when the lease ends.
pub const DEFAULT_ROW_WAIT: Duration = Duration::from_secs(2);

/// SQLSTATE `lock_not_available`: `lock_timeout` expired.
const LOCK_NOT_AVAILABLE: &str = "55P03";

/// The `task_lock` backend. Cheap to clone.
#[derive(Debug, Clone)]
pub struct PgLock {
    pool: PgPool,
    /// How long the acquisition waits for a busy row, as `lock_timeout` (milliseconds).
    row_wait: String,
}

impl PgLock {
    pub fn new(pool: PgPool) -> Self {
        PgLock {
            pool,
            row_wait: lock_timeout(DEFAULT_ROW_WAIT),
        }
    }

    /// The same lock, waiting at most `wait` for a busy row instead of [`DEFAULT_ROW_WAIT`].
    pub fn with_row_wait(mut self, wait: Duration) -> Self {
        self.row_wait = lock_timeout(wait);
        self
    }

    /// Takes the lock when the row is missing or expired; answers the holder, without waiting for
    /// its fence, when it is live.
    ///
    /// One statement in its own transaction: no `begin` and `commit` around it, so nothing of the
    /// acquisition is left open on the client's side (a process paused after it holds no row lock),
    /// and the row wait is set by the statement itself, local to its transaction.
    /// An attempt that wrote nothing reads the holder with `holder`, a second statement that
    /// waits for no lock either.
    pub async fn try_acquire(&self, spec: &LockSpec) -> Result<Acquired, LockError> {
        let asked_at = Instant::now();
        // a fresh id per acquisition, never derived from the host or instance
        let owner_token = OwnerToken::random();
        let granted = sqlx::query!(
            r#"
            insert into task_lock (task_name, locked_until, locked_at, locked_by, owner_token, fencing_token)
            -- the first token of this timeline: 1 on timeline 1, (timeline - 1) << 32 + 1 after
            -- a promotion (see "Tokens carry the timeline" above)
            select $1, asked.granted + $2, asked.granted, $3, $4, asked.timeline_floor + 1
            -- the row wait, set before the row to insert exists, so before any wait for the row;
            -- local to this statement's transaction
            from (select clock_timestamp() as granted, set_config('lock_timeout', $5, true) as row_wait,
                         -- the WAL insertion timeline: the first 8 hex digits of the current WAL
                         -- file's name (pg_control_checkpoint() lags until a checkpoint). A node
                         -- in recovery has none: 0, and the insert fails as read-only (25006)
                         case when pg_is_in_recovery() then 0
                              else (('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint - 1) << 32
                         end as timeline_floor) as asked
            -- only when this statement's snapshot, read without waiting for any lock, shows no
            -- live holder: with a live one it writes nothing at once, instead of queueing for the
            -- row behind the holder's fenced transaction
            where not exists (
                select from task_lock where task_name = $1 and locked_until >= clock_timestamp()
            )
            on conflict (task_name) do update
                -- evaluated once the row is locked, after any wait for the old holder's fence:
                -- the lease counts from then (excluded.* times were read before the wait)
                set (locked_at, locked_until) = (
                        select granted, granted + $2 from (select clock_timestamp() as granted) as locked
                    ),
                    locked_by = excluded.locked_by,
                    owner_token = excluded.owner_token,
                    -- one more than the last, and never below this timeline's first token,
                    -- however far a promotion took the counter back
                    fencing_token = greatest(task_lock.fencing_token + 1, excluded.fencing_token)
                -- judged on the latest row version: only an expired lock is taken over
                where task_lock.locked_until < clock_timestamp()
            returning fencing_token, locked_at, locked_until
            "#,
            spec.task_name.as_str(),
            interval(spec.at_most_for),
            spec.instance_id,
            owner_token.0,
            self.row_wait
        )
        .fetch_optional(&self.pool)
        .await;
        match granted {
            Ok(Some(row)) => {
                let lease = Lease {
                    task_name: spec.task_name.clone(),
                    locked_by: spec.instance_id.clone(),
                    owner_token,
                    fencing_token: row.fencing_token.into(),
                    locked_at: row.locked_at,
                    locked_until: row.locked_until,
                    asked_at,
                };
                Ok(won!(lease, "lock acquired"))
            }
            // Held: the snapshot showed a live holder, or it showed the lock free or expired and
            // another replica took it first. A new statement, with a new snapshot, reads that
            // holder; it waits for no lock either.
            Ok(None) => holder(&self.pool, &spec.task_name).await,
            Err(e) if is_lock_timeout(&e) => {
                // The row stayed locked past the wait: someone is mid-transaction on it.
                tracing::warn!(task.name = %spec.task_name, "lock row busy; treating the lock as held");
                holder(&self.pool, &spec.task_name).await
            }
            Err(e) => Err(e.into()),
        }
    }

    /// [`super::JobLock::renew`]: locks the row first, so the new lease counts from the moment the
    /// lock was ours, however long the statement waited for it.
    ///
    /// The row is locked in a CTE (`for no key update`, which waits for writers of the row but
    /// not for the holder's own fence), so that the update joining it reads the clock after the
    /// row lock was obtained (see "Which clock reading" above).
    pub async fn renew(&self, lease: &Lease, at_most_for: Duration) -> Result<Option<Lease>, LockError> {
        let locked_until = sqlx::query_scalar!(
            r#"
            with mine as materialized (
                select task_name, locked_until
                from task_lock
                where task_name = $1 and owner_token = $2 and fencing_token = $3
                for no key update
            )
            update task_lock
            -- read after the row lock was obtained (a plain update reads it before waiting)
            set locked_until = clock_timestamp() + $4
            from mine
            -- still ours and not expired once locked (an expired lease is lost even when nobody
            -- has taken it over yet): a filter on the locked row, so also read after the wait
            where task_lock.task_name = mine.task_name and mine.locked_until > clock_timestamp()
            returning task_lock.locked_until
            "#,
            lease.task_name.as_str(),
            lease.owner_token.0,
            lease.fencing_token.0,
            interval(at_most_for)
        )
        .fetch_optional(&self.pool)
        .await?;
        Ok(locked_until.map(|locked_until| Lease {
            locked_until,
            ..lease.clone()
        }))
    }

    /// [`super::JobLock::release`]: a plain update of the row, if it is still this acquisition's.
    ///
    /// Unlike the renewal it need not lock the row first ("Which clock reading" above says why).
    /// A takeover that committed while it waited changed the tokens: the re-checked row no longer
    /// matches and nothing is released.
    pub async fn release(&self, lease: &Lease, at_least_for: Duration) -> Result<bool, LockError> {
        let released = sqlx::query!(
            r#"
            update task_lock
            -- keep the lock until at_least_for after it was taken, but never lengthen it
            set locked_until = least(locked_until, greatest(clock_timestamp(), locked_at + $4))
            where task_name = $1 and owner_token = $2 and fencing_token = $3
            "#,
            lease.task_name.as_str(),
            lease.owner_token.0,
            lease.fencing_token.0,
            interval(at_least_for)
        )
        .execute(&self.pool)
        .await?;
        Ok(released.rows_affected() == 1)
    }

    pub async fn list(&self) -> Result<Vec<Lock>, LockError> {
        let rows = sqlx::query_as!(
            Lock,
            r#"
            select task_name, locked_by, locked_at, locked_until, fencing_token,
                   locked_until > now() as "held!"
            from task_lock
            order by task_name
            "#
        )
        .fetch_all(&self.pool)
        .await?;
        Ok(rows)
    }
}

/// The Redis backend's record in `task_lock`: the fencing token it publishes, which the fence
/// checks, and the end of each released lease, for the admin view. The lease itself lives in
/// Redis ([`super::redis`] explains why the token must be published here). Cheap to clone.
#[derive(Debug, Clone)]
pub(super) struct TokenRecord {
    pool: PgPool,
    /// How long a publish waits for a busy row, as `lock_timeout` (milliseconds).
    row_wait: String,
}

/// A `task_lock` row as the Redis backend published it; the live holder is in Redis.
pub(super) struct PublishedRow {
    pub task_name: TaskName,
    pub locked_by: String,
    pub locked_at: DateTime<Utc>,
    pub locked_until: DateTime<Utc>,
    pub fencing_token: FencingToken,
}

impl TokenRecord {
    /// The record in `pool`, waiting at most `row_wait` for a busy row when publishing.
    pub(super) fn new(pool: PgPool, row_wait: Duration) -> Self {
        TokenRecord {
            pool,
            row_wait: lock_timeout(row_wait),
        }
    }

    /// The same record, waiting at most `row_wait` for a busy row instead.
    pub(super) fn with_row_wait(self, row_wait: Duration) -> Self {
        TokenRecord::new(self.pool, row_wait)
    }

    /// The floor the next Redis token is numbered above: the token last published for
    /// `task_name`, and never below the last token a previous timeline could have issued
    /// (`(timeline - 1) << 32`), so a promotion that lost the published row, together with a
    /// Redis that lost its counter, still cannot hand a token out twice. 0 on timeline 1 with
    /// nothing published.
    pub(super) async fn published_token(&self, task_name: &TaskName) -> Result<FencingToken, LockError> {
        let token = sqlx::query_scalar!(
            r#"
            select greatest(
                (select fencing_token from task_lock where task_name = $1),
                -- a node in recovery has no WAL insertion timeline; its publish fails as read-only
                case when pg_is_in_recovery() then 0
                     else (('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint - 1) << 32
                end
            ) as "floor!"
            "#,
            task_name.as_str()
        )
        .fetch_one(&self.pool)
        .await?;
        Ok(FencingToken(token))
    }

    /// Makes `lease.fencing_token` the task's current token, unless a newer one is there already:
    /// `Ok(false)` then, and nothing changed. [`LockError::RowBusy`] when the row stayed locked
    /// past the row wait.
    pub(super) async fn publish(&self, lease: &Lease) -> Result<bool, LockError> {
        // one statement in its own transaction, which sets its own row wait, as the acquisition
        let published = sqlx::query_scalar!(
            r#"
            insert into task_lock (task_name, locked_until, locked_at, locked_by, owner_token, fencing_token)
            select $1, $2, $3, $4, $5, $6
            from set_config('lock_timeout', $7, true) as row_wait
            on conflict (task_name) do update
                set locked_until = excluded.locked_until,
                    locked_at = excluded.locked_at,
                    locked_by = excluded.locked_by,
                    owner_token = excluded.owner_token,
                    fencing_token = excluded.fencing_token
                -- only a newer token: a winner publishing late, after a later winner, changes
                -- nothing. The update waits for fenced transactions of the previous holder.
                where task_lock.fencing_token < excluded.fencing_token
            returning fencing_token
            "#,
            lease.task_name.as_str(),
            lease.locked_until,
            lease.locked_at,
            lease.locked_by,
            lease.owner_token.0,
            lease.fencing_token.0,
            self.row_wait
        )
        .fetch_optional(&self.pool)
        .await;
        match published {
            Ok(published) => Ok(published.is_some()),
            Err(e) if is_lock_timeout(&e) => Err(LockError::RowBusy {
                task_name: lease.task_name.clone(),
                source: e,
            }),
            Err(e) => Err(e.into()),
        }
    }

    /// Records the times of a lease restarted once its token was published (the row is the admin
    /// view's, once the key is gone), if the row is still this acquisition's.
    pub(super) async fn record_grant(&self, lease: &Lease) -> Result<(), LockError> {
        sqlx::query!(
            r#"
            update task_lock
            set locked_at = $4, locked_until = $5
            where task_name = $1 and owner_token = $2 and fencing_token = $3
            "#,
            lease.task_name.as_str(),
            lease.owner_token.0,
            lease.fencing_token.0,
            lease.locked_at,
            lease.locked_until
        )
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Shortens the published row to the release's end, if the row is still this acquisition's.
    pub(super) async fn record_end(&self, lease: &Lease, ends: DateTime<Utc>) -> Result<(), LockError> {
        sqlx::query!(
            r#"
            update task_lock
            set locked_until = least(locked_until, $4)
            where task_name = $1 and owner_token = $2 and fencing_token = $3
            "#,
            lease.task_name.as_str(),
            lease.owner_token.0,
            lease.fencing_token.0,
            ends
        )
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Every task that was ever locked, by task name.
    pub(super) async fn rows(&self) -> Result<Vec<PublishedRow>, LockError> {
        let rows = sqlx::query_as!(
            PublishedRow,
            r#"
            select task_name, locked_by, locked_at, locked_until, fencing_token
            from task_lock
            order by task_name
            "#
        )
        .fetch_all(&self.pool)
        .await?;
        Ok(rows)
    }

    /// The holder of the published row, which a winner that could not publish defers to.
    pub(super) async fn holder(&self, task_name: &TaskName) -> Result<Acquired, LockError> {
        holder(&self.pool, task_name).await
    }
}

/// The holder recorded in the `task_lock` row of `task_name`, as [`Acquired::Held`].
async fn holder(executor: impl sqlx::PgExecutor<'_>, task_name: &TaskName) -> Result<Acquired, LockError> {
    let row = sqlx::query!(
        "select locked_by, locked_until from task_lock where task_name = $1",
        task_name.as_str()
    )
    .fetch_optional(executor)
    .await?;
    // Rows are never deleted by the service; only someone editing the table by hand gets here.
    let row = row.ok_or_else(|| LockError::RowVanished {
        task_name: task_name.clone(),
    })?;
    Ok(Acquired::Held {
        holder: row.locked_by,
        locked_until: row.locked_until,
    })
}

/// A row wait as the value of `lock_timeout` (milliseconds), which the acquisition and the
/// Redis backend's publish set for their own statement's transaction.
fn lock_timeout(row_wait: Duration) -> String {
    millis_at_least_one(row_wait).to_string()
}

/// Whole milliseconds, at least 1: in both settings 0 means "no limit", the opposite of intended.
fn millis_at_least_one(d: Duration) -> u128 {
    d.as_millis().max(1)
}

/// A duration as a PostgreSQL interval, to microsecond precision (the database's own), saturating
/// rather than failing on absurd values: the database then refuses the timestamp overflow itself.
fn interval(d: Duration) -> PgInterval {
    PgInterval {
        months: 0,
        days: 0,
        microseconds: i64::try_from(d.as_micros()).unwrap_or(i64::MAX),
    }
}

/// Whether `e` is the row-lock wait of [`lock_timeout`] running out.
fn is_lock_timeout(e: &sqlx::Error) -> bool {
    e.as_database_error()
        .and_then(|d| d.code())
        .is_some_and(|code| code == LOCK_NOT_AVAILABLE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_keep_microseconds_and_saturate() {
        assert_eq!(interval(Duration::from_secs(90)).microseconds, 90_000_000);
        assert_eq!(interval(Duration::from_nanos(1_500)).microseconds, 1);
        let huge = interval(Duration::MAX);
        assert_eq!((huge.months, huge.days, huge.microseconds), (0, 0, i64::MAX));
    }

    #[test]
    fn the_row_wait_is_in_milliseconds_and_never_zero() {
        assert_eq!(lock_timeout(Duration::from_secs(2)), "2000");
        // a zero wait would mean "wait forever" to PostgreSQL
        assert_eq!(lock_timeout(Duration::ZERO), "1");
    }
}

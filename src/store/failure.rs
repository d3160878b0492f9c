//! What a database error means for the caller, decided once for the API, the job and readiness.
//!
//! Production's database is a cluster that fails over behind a proxy (docs/DESIGN.md §12): for a
//! few seconds connections break, servers shut down, and the node behind the proxy may be a
//! read-only standby. None of that is a bug, so none of it may answer 500. Every database error
//! falls in one of four classes:
//!
//! | class | errors | the API answers | the job |
//! |---|---|---|---|
//! | [`DbFailure::Unavailable`] | I/O, TLS and protocol errors, a closed or timed-out pool, class `08` (connection), `57P01`-`57P03` (shutting down, cannot connect now), `53300` (too many connections), `25006` (a read-only node), `57014` (a statement cancelled or timed out), `55P03` (a lock wait timed out) | 503 `unavailable` with `Retry-After` | the date fails and is redone by the next fire |
//! | [`DbFailure::Retryable`] | `40001` (serialization failure), `40P01` (deadlock) | the transaction again, a few times with jitter ([`super::retry`]), then 503 | as unavailable |
//! | [`DbFailure::Check`] | `23514`, a check constraint refused a value | 422 naming the field | (never: the job writes computed values) |
//! | [`DbFailure::Other`] | anything else | 500, logged once | the date fails |
//!
//! A read-only node is also remembered ([`saw_read_only`]): the pool then checks the connections
//! it takes back and drops those still on a read-only node (`store::database`), so that after a
//! failover new connections go through the proxy to the new primary without a restart.

use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// What a database error means for the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DbFailure {
    /// The database cannot do the work now (unreachable, restarting, read-only, overloaded); the
    /// same request later may succeed.
    Unavailable,
    /// The transaction lost a race (serialization failure, deadlock) and rolled back: running it
    /// again is safe and will likely succeed.
    Retryable,
    /// A check constraint refused a value: the client's input, named by the constraint.
    Check,
    /// Anything else: a bug, or something no retry fixes.
    Other,
}

impl DbFailure {
    /// Classifies `error`, remembering a read-only node when it meets one.
    pub fn of(error: &sqlx::Error) -> Self {
        let failure = classify(error);
        if is_read_only(error) {
            saw_read_only();
        }
        failure
    }
}

/// The SQLSTATE of a database error, if it is one.
pub fn sqlstate(error: &sqlx::Error) -> Option<String> {
    match error {
        sqlx::Error::Database(db) => db.code().map(|code| code.into_owned()),
        _ => None,
    }
}

fn classify(error: &sqlx::Error) -> DbFailure {
    match error {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        // "unexpected response from SSLRequest" and the like: a server going away mid-handshake.
        | sqlx::Error::Protocol(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => DbFailure::Unavailable,
        sqlx::Error::Database(db) => match db.code().as_deref() {
            Some(code) => of_sqlstate(code),
            None => DbFailure::Other,
        },
        _ => DbFailure::Other,
    }
}

fn of_sqlstate(code: &str) -> DbFailure {
    match code {
        "40001" | "40P01" => DbFailure::Retryable,
        "23514" => DbFailure::Check,
        "57P01" | "57P02" | "57P03" | "53300" | "25006" | "57014" | "55P03" => DbFailure::Unavailable,
        // Class 08: connection exceptions.
        code if code.starts_with("08") => DbFailure::Unavailable,
        _ => DbFailure::Other,
    }
}

/// `25006 read_only_sql_transaction`: the node behind the connection accepts no writes.
fn is_read_only(error: &sqlx::Error) -> bool {
    sqlstate(error).as_deref() == Some("25006")
}

/// How long after a read-only node was last met the pool keeps checking the connections it takes
/// back. Past it, a node that turned read-only again is met again by a write first.
pub const READ_ONLY_WATCH: Duration = Duration::from_secs(30);

/// Milliseconds after [`EPOCH`] at which a read-only node was last met, plus one (0: never).
static LAST_READ_ONLY: AtomicU64 = AtomicU64::new(0);
static EPOCH: LazyLock<Instant> = LazyLock::new(Instant::now);

/// Records that a connection met a read-only node (a write refused with `25006`, or readiness
/// found `transaction_read_only` on).
///
/// Process-wide, not per pool: one process has one pool (tests that run several replicas in one
/// process only make each other check a little more).
pub fn saw_read_only() {
    let millis = u64::try_from(EPOCH.elapsed().as_millis()).unwrap_or(u64::MAX);
    LAST_READ_ONLY.store(millis.saturating_add(1), Ordering::Relaxed);
}

/// Whether a read-only node was met within [`READ_ONLY_WATCH`].
pub fn read_only_lately() -> bool {
    match LAST_READ_ONLY.load(Ordering::Relaxed) {
        0 => false,
        seen => EPOCH.elapsed() < Duration::from_millis(seen - 1) + READ_ONLY_WATCH,
    }
}

/// Whether the node behind `connection` accepts no writes: a standby in recovery, or a database
/// whose sessions default to read-only transactions.
pub async fn on_read_only_node(connection: &mut sqlx::PgConnection) -> sqlx::Result<bool> {
    sqlx::query_scalar("select pg_is_in_recovery() or current_setting('transaction_read_only') = 'on'")
        .fetch_one(connection)
        .await
}

/// How many times a transaction that keeps losing races runs ([`Retries`]).
pub const CONFLICT_ATTEMPTS: u32 = 3;

/// An error that may be a lost race ([`DbFailure::Retryable`]): the transaction rolled back and
/// may simply run again.
pub trait Conflict {
    fn is_conflict(&self) -> bool;
}

impl Conflict for sqlx::Error {
    fn is_conflict(&self) -> bool {
        DbFailure::of(self) == DbFailure::Retryable
    }
}

/// The retries of one transaction (or one autocommit statement) that may lose a race:
///
/// ```ignore
/// let mut retries = Retries::default();
/// loop {
///     match transaction().await {
///         Err(error) if retries.again(&error).await => continue,
///         done => return done,
///     }
/// }
/// ```
///
/// A loop rather than a function taking the transaction as a closure: the handlers' futures
/// must be `Send`, which an async closure borrowing the request cannot yet promise.
#[derive(Debug, Default)]
pub struct Retries {
    tries: u32,
}

impl Retries {
    /// Whether to run the transaction again after `error`: only a lost race, at most
    /// [`CONFLICT_ATTEMPTS`] runs in all, after a random pause that grows each time, so two
    /// transactions that deadlocked each other do not meet again. The last error is the
    /// caller's to answer (503).
    pub async fn again(&mut self, error: &impl Conflict) -> bool {
        self.tries += 1;
        if !error.is_conflict() || self.tries >= CONFLICT_ATTEMPTS {
            return false;
        }
        tracing::info!(
            attempt = self.tries,
            "the transaction lost a race (serialization or deadlock); running it again"
        );
        tokio::time::sleep(jitter(self.tries)).await;
        true
    }
}

/// A random pause below 20 ms × 2^`tries`.
fn jitter(tries: u32) -> Duration {
    use std::hash::{BuildHasher, Hasher};
    let random = std::collections::hash_map::RandomState::new().build_hasher().finish();
    let ceiling = 20u64 << tries.min(6);
    Duration::from_millis(random % ceiling)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlstates_fall_in_their_class() {
        for (code, class) in [
            ("40001", DbFailure::Retryable),
            ("40P01", DbFailure::Retryable),
            ("23514", DbFailure::Check),
            ("57P01", DbFailure::Unavailable),
            ("57P02", DbFailure::Unavailable),
            ("57P03", DbFailure::Unavailable),
            ("08006", DbFailure::Unavailable),
            ("08P01", DbFailure::Unavailable),
            ("25006", DbFailure::Unavailable),
            ("53300", DbFailure::Unavailable),
            ("57014", DbFailure::Unavailable),
            ("55P03", DbFailure::Unavailable),
            ("23505", DbFailure::Other),
            ("42P01", DbFailure::Other),
        ] {
            assert_eq!(of_sqlstate(code), class, "{code}");
        }
    }

    #[test]
    fn pool_and_connection_errors_are_unavailable() {
        let io = sqlx::Error::Io(std::io::Error::from(std::io::ErrorKind::ConnectionReset));
        assert_eq!(DbFailure::of(&io), DbFailure::Unavailable);
        assert_eq!(DbFailure::of(&sqlx::Error::PoolTimedOut), DbFailure::Unavailable);
        assert_eq!(DbFailure::of(&sqlx::Error::RowNotFound), DbFailure::Other);
    }

    #[derive(Debug, PartialEq)]
    struct Lost(bool);

    impl Conflict for Lost {
        fn is_conflict(&self) -> bool {
            self.0
        }
    }

    #[tokio::test(start_paused = true)]
    async fn conflicts_are_tried_again_a_bounded_number_of_times() {
        let runs_until = async |errors: &[Lost]| {
            let mut retries = Retries::default();
            let mut runs = 0;
            loop {
                let error = &errors[runs.min(errors.len() - 1)];
                runs += 1;
                if !retries.again(error).await {
                    return runs;
                }
            }
        };
        assert_eq!(runs_until(&[Lost(true)]).await, CONFLICT_ATTEMPTS as usize);
        assert_eq!(runs_until(&[Lost(true), Lost(false)]).await, 2);
        assert_eq!(runs_until(&[Lost(false)]).await, 1);
    }
}

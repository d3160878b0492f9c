//! Fencing at the database: the check every settlement transaction starts with.
//!
//! # Why the lock alone is not enough
//!
//! A lock with a lease can only promise that *the lock store* believes one holder at a time. It
//! cannot stop a process that no longer holds the lock from writing:
//!
//! 1. Replica A takes the lock (lease 15 minutes) and starts settling.
//! 2. A is paused: a stop-the-world GC, `SIGSTOP`, a VM live-migrated or suspended, a laptop lid.
//!    Nothing runs in A, including its lease renewal, so it cannot notice anything.
//! 3. The lease expires. Replica B takes the lock over, as it should (a crashed holder must not
//!    block the job forever), and settles the same date.
//! 4. A resumes. From its point of view no time has passed: it still "holds" the lock and carries
//!    on with the write it was about to make. Both A and B are now writing.
//!
//! No check A makes *before* writing closes this: A can be paused between the check and the write.
//! ShedLock documents the same duplicate runs in its own terms: a task that outlives
//! `lockAtMostFor` runs twice, and replicas with skewed clocks disagree on when a lock expires.
//! The answer (Martin Kleppmann, "How to do distributed locking", 2016) is a *fencing token*: a
//! number that grows with every acquisition, carried by every write, and checked by the store that
//! receives the write, which refuses any token older than the newest it has seen. Only the store
//! can do this, because only the store sees the writes in the order they really happen.
//!
//! # How it is done here
//!
//! `task_lock.fencing_token` grows by one on every acquisition. Every settlement transaction is
//! opened by [`begin`] and starts with [`guard`]: `select ... where fencing_token = $token for key
//! share` on the task's lock row.
//!
//! - A stale token matches no row: the transaction is refused with [`Fenced`] before it wrote
//!   anything, and the caller rolls it back.
//! - A current token matches, and the row lock is held until commit. A takeover writes a new
//!   `owner_token` and the next `fencing_token`, columns of the unique index
//!   `task_lock_key_tokens`: PostgreSQL treats that as a key update, which must wait for every
//!   `for key share` lock on the row. So the
//!   token cannot change while the transaction runs and the check stays true until the commit.
//!   A takeover that comes in the middle waits for the commit, then every later transaction of
//!   the old holder is refused.
//! - The holder's own lease renewal changes only `locked_until`, a non-key update, which
//!   `for key share` lets through (the lock is carried over to the new row version). A date may
//!   therefore run longer than the lease: the renewal never waits for the holder's own fenced
//!   transaction. (`for share` would make it wait, and the keeper would give the lease up.)
//!
//! With Redis holding the lock instead, the token still comes from this row, so this check is the
//! same for both backends.
//!
//! # A holder paused inside a transaction
//!
//! Its row lock stays, so takeovers wait: each gives up after its row wait and reports the lock
//! as held. To bound that, [`begin`] opens the transaction with `idle_in_transaction_session_timeout`
//! set for it ([`FENCED_IDLE_TIMEOUT`]): the database ends a session that sits idle inside a
//! transaction that long, rolls the transaction back (so the paused holder wrote nothing), and frees
//! the row. The settlement runs set-based statements back to back, so a healthy holder never idles
//! that long.
//!
//! The limit goes in the same message as the `begin`, not in a statement after it: a process
//! stopped between the two would leave its session idle in a transaction with no limit at all,
//! for as long as it stays stopped (a CI run caught one, `tests/it/replicas/pause.rs`).

use std::time::Duration;

use sqlx::{AssertSqlSafe, PgConnection, PgPool, Postgres, Transaction};

use crate::domain::{FencingToken, TaskName};
use crate::store::session::StatementLimits;

/// How long a fenced transaction may sit idle between two statements before the database ends its
/// session. Set by [`begin`]; a caller that needs longer may `set local` it again afterwards.
pub const FENCED_IDLE_TIMEOUT: Duration = Duration::from_secs(10);

/// Opens a transaction for [`guard`], with [`FENCED_IDLE_TIMEOUT`] in force from its first moment
/// (see the module docs: one message, so no instant of it is without the limit).
pub async fn begin(pool: &PgPool) -> sqlx::Result<Transaction<'static, Postgres>> {
    pool.begin_with(AssertSqlSafe(begin_statement())).await
}

/// [`begin`] with `limits` on each of the transaction's statements, set in the same message: a
/// date's transaction, whose statements a DBA's `statement_timeout` must not cut short and a
/// stuck lock must not hold for ever (`FINESETTLE_JOB_STATEMENT_TIMEOUT`, `_LOCK_TIMEOUT`).
pub async fn begin_limited(pool: &PgPool, limits: &StatementLimits) -> sqlx::Result<Transaction<'static, Postgres>> {
    let statement = format!("{}; {}", begin_statement(), limits.set_local());
    pool.begin_with(AssertSqlSafe(statement)).await
}

fn begin_statement() -> String {
    // SET takes no bound parameters; the value is our own constant, in milliseconds.
    format!(
        "begin; set local idle_in_transaction_session_timeout = {}",
        FENCED_IDLE_TIMEOUT.as_millis()
    )
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("fenced: fencing token {token} of {task_name} is no longer current")]
pub struct Fenced {
    pub task_name: TaskName,
    pub token: FencingToken,
}

#[derive(Debug, thiserror::Error)]
pub enum FenceError {
    /// The token is stale: another holder took the lock over. Roll back and stop.
    #[error(transparent)]
    Fenced(#[from] Fenced),
    #[error("fence check failed: {0}")]
    Db(#[from] sqlx::Error),
}

/// Must be the first statement of every settlement transaction: passes only while
/// `fencing_token` is the task's current token, and keeps it current until the transaction ends.
///
/// Takes the connection of a transaction opened by [`begin`] (`&mut *tx`); outside a transaction
/// the share lock would end with the statement and guard nothing.
pub async fn guard(tx: &mut PgConnection, task_name: &TaskName, fencing_token: FencingToken) -> Result<(), FenceError> {
    let current = sqlx::query_scalar!(
        r#"
        select 1 as "one!"
        from task_lock
        where task_name = $1 and fencing_token = $2
        -- held until commit: a takeover (a key update: the tokens are in a unique index)
        -- waits for this transaction; the holder's renewal (locked_until only) does not
        for key share
        "#,
        task_name.as_str(),
        fencing_token.0
    )
    .fetch_optional(&mut *tx)
    .await?;
    match current {
        Some(_) => Ok(()),
        None => Err(Fenced {
            task_name: task_name.clone(),
            token: fencing_token,
        }
        .into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fenced_names_the_task_and_the_stale_token() {
        let e = FenceError::from(Fenced {
            task_name: TaskName::from_static("settle-fines"),
            token: FencingToken(7),
        });
        assert_eq!(
            e.to_string(),
            "fenced: fencing token 7 of settle-fines is no longer current"
        );
        assert!(matches!(
            e,
            FenceError::Fenced(Fenced {
                token: FencingToken(7),
                ..
            })
        ));
    }
}

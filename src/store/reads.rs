//! Connections kept for the API's hottest reads, without the pool's round trips around each use.
//!
//! sqlx's pool tests a connection with a round trip when it hands it out (`test_before_acquire`)
//! and again, in a task of its own, when it takes it back (always: that ping flushes what a
//! cancelled statement left behind). A one-statement read through the pool is therefore three
//! round trips, and on a busy two-core machine their sends and wake-ups, on both sides, cost more
//! than the statement itself (load/results/reads.md).
//!
//! `ReadConnections` keeps a few of the pool's own connections checked out, one per slot, and
//! lends them to one statement at a time: no round trip but the statement. They stay within
//! `FINESETTLE_DB_MAX_CONNECTIONS` (they are pool connections), and a request that finds every
//! slot busy takes one from the pool as before. A slot's connection is
//!
//! - pinged before use when it sat idle longer than [`IDLE_CHECK`] (what `test_before_acquire`
//!   protects against: a server restarted or a connection cut while nobody used it);
//! - dropped, and replaced from the pool at its next use, after any error that is not the
//!   database's answer to the statement or says the server is going away
//!   ([`ReadConnection::check`]), and while a read-only node was met lately (a failover:
//!   `store::failure`);
//! - safe after a cancelled statement (a request timed out, a client gone): sqlx reads whatever
//!   the server still sends for it before the next statement starts;
//! - given back to the pool by [`ReadConnections::close`], before the pool closes.
//!
//! Only plain autocommit reads use it: a statement never leaves a transaction or a lock behind.

use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use sqlx::pool::PoolConnection;
use sqlx::{Connection, PgConnection, PgPool, Postgres};
use tokio::sync::{Mutex, OwnedMutexGuard};

use super::failure::{self, DbFailure};

/// A slot's connection idle longer than this is pinged before it is lent again.
pub const IDLE_CHECK: Duration = Duration::from_secs(1);

/// At most this many slots, whatever the pool's size: a few connections saturate the two cores
/// of a replica; the rest of the pool stays for the job and the writes.
const MAX_SLOTS: u32 = 8;

struct Slot {
    connection: Option<PoolConnection<Postgres>>,
    last_used: Instant,
}

/// Cheap to clone: one `Arc`, and the slots are shared.
#[derive(Clone)]
pub struct ReadConnections(Arc<Shared>);

struct Shared {
    pool: PgPool,
    slots: Vec<Arc<Mutex<Slot>>>,
    next: AtomicUsize,
    closed: AtomicBool,
}

impl ReadConnections {
    /// Slots for half of a pool of `max_connections` (at least one, at most [`MAX_SLOTS`]).
    pub fn new(pool: PgPool, max_connections: u32) -> Self {
        let count = (max_connections / 2).clamp(1, MAX_SLOTS);
        let slots = (0..count)
            .map(|_| {
                Arc::new(Mutex::new(Slot {
                    connection: None,
                    last_used: Instant::now(),
                }))
            })
            .collect();
        ReadConnections(Arc::new(Shared {
            pool,
            slots,
            next: AtomicUsize::new(0),
            closed: AtomicBool::new(false),
        }))
    }

    /// A connection for one statement: a free slot's, or else one of the pool.
    pub async fn acquire(&self) -> sqlx::Result<ReadConnection> {
        let shared = &*self.0;
        if !shared.closed.load(Ordering::Relaxed) {
            let start = shared.next.fetch_add(1, Ordering::Relaxed);
            for i in 0..shared.slots.len() {
                let slot = &shared.slots[(start + i) % shared.slots.len()];
                let Ok(mut slot) = Arc::clone(slot).try_lock_owned() else {
                    continue;
                };
                // After a read-only node was met (a failover), a slot's connection goes back to
                // the pool, which drops it if it is on such a node: reads follow the primary.
                if failure::read_only_lately() {
                    slot.connection = None;
                }
                let idle = slot.last_used.elapsed() > IDLE_CHECK;
                if idle
                    && let Some(connection) = slot.connection.as_mut()
                    && connection.ping().await.is_err()
                {
                    slot.connection = None;
                }
                if slot.connection.is_none() {
                    slot.connection = Some(shared.pool.acquire().await?);
                }
                return Ok(ReadConnection(Lent::Slot(slot)));
            }
        }
        Ok(ReadConnection(Lent::Pool(shared.pool.acquire().await?)))
    }

    /// Gives every slot's connection back to the pool and lends none from now on. Call before
    /// closing the pool, which waits for its connections.
    pub async fn close(&self) {
        self.0.closed.store(true, Ordering::Relaxed);
        for slot in self.0.slots.iter() {
            slot.lock().await.connection = None;
        }
    }
}

/// One statement's connection; derefs to the connection.
pub struct ReadConnection(Lent);

enum Lent {
    Slot(OwnedMutexGuard<Slot>),
    Pool(PoolConnection<Postgres>),
}

impl ReadConnection {
    /// Passes `result` on; after an error that is not the database's answer (the connection
    /// broke, the protocol went wrong) or says the server is going away, the slot's connection
    /// is dropped, to be replaced.
    pub fn check<T>(&mut self, result: sqlx::Result<T>) -> sqlx::Result<T> {
        if let (Err(error), Lent::Slot(slot)) = (&result, &mut self.0)
            && (!matches!(error, sqlx::Error::Database(_) | sqlx::Error::RowNotFound)
                || DbFailure::of(error) == DbFailure::Unavailable)
        {
            slot.connection = None;
        }
        result
    }
}

impl Deref for ReadConnection {
    type Target = PgConnection;

    fn deref(&self) -> &PgConnection {
        match &self.0 {
            Lent::Slot(slot) => slot.connection.as_deref().expect("a lent slot has a connection"),
            Lent::Pool(connection) => connection,
        }
    }
}

impl DerefMut for ReadConnection {
    fn deref_mut(&mut self) -> &mut PgConnection {
        match &mut self.0 {
            Lent::Slot(slot) => slot.connection.as_deref_mut().expect("a lent slot has a connection"),
            Lent::Pool(connection) => connection,
        }
    }
}

impl Drop for ReadConnection {
    fn drop(&mut self) {
        if let Lent::Slot(slot) = &mut self.0 {
            slot.last_used = Instant::now();
        }
    }
}

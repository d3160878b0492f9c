//! Noticing a promotion of the database (issue 33), and what it may have cost.
//!
//! With asynchronous replication a promoted standby may lack the old primary's last
//! transactions: acknowledged SUCCESS rows, payments, and the lock's last acquisitions (the
//! fencing counter went back from 17 to 1 once). The lock keeps tokens apart by carrying the
//! timeline ([`crate::lock::postgres`]); this module tells people.
//!
//! Each replica remembers, in memory ([`FailoverWatch`]), the database identity it last saw
//! (system identifier and timeline) and what it saw acknowledged: the last fencing token it was
//! granted and the last date it committed SUCCESS for. The alert evaluation (once a minute) and
//! every new pool connection read the identity again ([`check`]). A new timeline is a failover:
//! a log event, the months touched audited when final, and one `DATABASE_FAILOVER` alert across
//! replicas comparing what this replica saw with what the new primary holds.
//!
//! A replica started after the promotion remembers nothing from before it and raises nothing:
//! the replicas that were running notice it.

mod check;
mod worker;

use std::sync::{Arc, Mutex};

use chrono::NaiveDate;
use tokio::sync::Notify;

pub use check::{FailoverRules, Noticed, check, resolve_resettled};
pub use worker::{CHECK_EVERY, report_replication, run_failover_watch, warn_without_synchronous_standby};

use crate::domain::FencingToken;
use crate::domain::failover::{Acknowledged, DatabaseIdentity};

/// What this replica last saw of the database. Cheap to clone; every clone is the same memory.
#[derive(Debug, Clone, Default)]
pub struct FailoverWatch {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    memory: Mutex<Memory>,
    /// Woken when a new connection found an identity other than the remembered one.
    changed: Notify,
}

#[derive(Debug, Default, Clone, Copy)]
struct Memory {
    identity: Option<DatabaseIdentity>,
    acknowledged: Acknowledged,
}

impl FailoverWatch {
    /// The lock granted this replica `token`.
    pub fn granted(&self, token: FencingToken) {
        self.memory().acknowledged.granted(token);
    }

    /// This replica committed SUCCESS for `date`.
    pub fn settled(&self, date: NaiveDate) {
        self.memory().acknowledged.settled(date);
    }

    /// What this replica saw acknowledged so far.
    pub fn acknowledged(&self) -> Acknowledged {
        self.memory().acknowledged
    }

    /// The identity this replica last checked.
    pub fn identity(&self) -> Option<DatabaseIdentity> {
        self.memory().identity
    }

    /// A new connection found `identity`: wakes [`FailoverWatch::changed`] when it differs from
    /// the remembered one (the check itself runs outside the connection's set-up).
    pub fn connected(&self, identity: Option<DatabaseIdentity>) {
        let remembered = self.memory().identity;
        if let (Some(remembered), Some(identity)) = (remembered, identity)
            && remembered != identity
        {
            self.inner.changed.notify_one();
        }
    }

    /// Completes once a new connection found another identity than the remembered one.
    pub async fn changed(&self) {
        self.inner.changed.notified().await;
    }

    /// Remembers `identity` as checked.
    fn remember(&self, identity: DatabaseIdentity) {
        self.memory().identity = Some(identity);
    }

    fn memory(&self) -> std::sync::MutexGuard<'_, Memory> {
        // A panic while holding it cannot leave two plain fields half-written.
        self.inner
            .memory
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

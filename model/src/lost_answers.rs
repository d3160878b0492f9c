//! Faults where the database did what a replica asked but the answer never reached the replica:
//! the connection broke between the commit and its reply (a network cut, a server killed right
//! after its commit, a failover). The replica takes the step as failed, as the real code takes
//! any connection error, and the protocol must stay safe whatever the store did meanwhile.

use crate::bugs::Bug;
use crate::protocol::{Outcome, Protocol};
use crate::world::{Job, Trigger, World};

impl Protocol {
    /// A fault: the lock store grants the free lock, but the answer is lost. The replica holds
    /// nothing and takes the store as unavailable: a cron fire tries again (after the scheduler's
    /// backoff, a second, well within a tick), an operator's run answers 503. The lease nobody
    /// knows it holds keeps the lock until it expires.
    pub(crate) fn grant_unheard(&self, w: &mut World, r: usize) -> Option<Outcome> {
        let Job::Acquiring { asked_at, trigger, .. } = Self::running(w, r)?.job else {
            return None;
        };
        if !self.faults_allowed(w) || !w.lock_is_free() {
            return None;
        }
        w.faults_left -= 1;
        let token = self.grant(w, r, asked_at).token;
        let now = w.now;
        let replica = &mut w.replicas[r];
        replica.job = Job::Idle;
        if trigger == Trigger::Cron {
            replica.retry_at = Some(now);
        }
        Some(Outcome::GrantUnheard {
            token,
            until: w.store.locked_until,
        })
    }

    /// A fault: the date's transaction reaches the database, which commits it (or refuses it at
    /// the fence or the unique index), but the answer is lost. The replica takes the date as
    /// failed: it writes the date's FAILED record, which ends only a record still RUNNING (so
    /// a SUCCESS it never heard of stays), and ends the run. The next fire plans from the records.
    pub(crate) fn commit_unheard(&self, w: &mut World, r: usize) -> Option<Outcome> {
        let (lease, date) = self.fault_in_date(w, r)?;
        let committed = self.commit_in_store(w, lease.token, date) == Outcome::Recorded { date };
        let failed_written = w.store.token == lease.token;
        if committed && failed_written && self.has(Bug::FailedOverwritesSuccess) {
            w.settled[usize::from(date)] = None;
        }
        w.replicas[r].job = Job::Releasing { token: lease.token };
        Some(Outcome::CommitUnheard { date, committed })
    }
}

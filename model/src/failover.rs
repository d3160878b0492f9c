//! Failover: the database's standby promoted to primary (at most once a run, as a fault), and the
//! fencing-token rule that keeps tokens unique across it.
//!
//! - **Synchronous replication** (Patroni's synchronous mode): a commit is acknowledged only once
//!   the standby has it, so the promoted standby holds every acknowledged commit. A promotion
//!   only drops the replicas' connections: an open date transaction is lost, and its date fails.
//! - **Asynchronous replication** (Patroni's default): the standby may stop receiving at any
//!   moment ([`Action::StandbyLags`](crate::Action::StandbyLags)), and every commit after that is
//!   acknowledged by the primary alone. The promotion brings the lock store and the SUCCESS
//!   records back to that moment: the tail is gone.
//!
//! The fencing counter goes back with the tail, so a plain counter would issue its tokens again
//! (two holders passing the fence). The service numbers each token above every token of the
//! earlier timelines instead ([`next_token`]): tokens stay unique under either replication. A
//! SUCCESS lost with the tail is another matter: the service cannot bring it back, and the
//! property that no acknowledged SUCCESS is lost holds only with synchronous replication.

use crate::protocol::{Outcome, Protocol};
use crate::world::{Database, Job, Standby, Store, World};

/// How the database replicates to the standby a failover promotes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Replication {
    Synchronous,
    Asynchronous,
}

/// The tokens of one timeline in the model; the service's tokens are 64-bit and give each
/// timeline 2³², more acquisitions than a timeline ever sees. The bounded worlds checked here
/// never take this many locks on one timeline (`Protocol::grant` asserts it).
pub const TOKENS_PER_TIMELINE: u8 = 16;

/// The token of the next acquisition: the counter's next, but never below the first token of the
/// store's timeline, so that a counter which a promotion took back still hands out tokens above
/// every one issued before (the service: `max(counter + 1, ((timeline - 1) << 32) + 1)`).
/// `with_timeline: false` is the plain counter ([`Bug::TokenIgnoresTimeline`](crate::Bug)).
pub fn next_token(store: &Store, with_timeline: bool) -> u8 {
    let counted = store.token + 1;
    if !with_timeline {
        return counted;
    }
    let floor = (store.timeline - 1) * TOKENS_PER_TIMELINE + 1;
    let token = counted.max(floor);
    assert!(
        token <= store.timeline * TOKENS_PER_TIMELINE,
        "the model's timeline {} ran out of tokens",
        store.timeline
    );
    token
}

impl World {
    /// What a standby that stops receiving now holds.
    pub fn standby(&self) -> Standby {
        Standby {
            store: self.store,
            settled: self.settled,
            successes: self.successes,
        }
    }
}

impl Protocol {
    /// Asynchronous replication: from now on the standby receives nothing (once a run, while a
    /// promotion may still follow). On its own this loses nothing; a later promotion loses every
    /// commit since.
    pub(crate) fn standby_lags(&self, w: &mut World) -> Option<Outcome> {
        let lags = self.config.failover == Some(Replication::Asynchronous)
            && w.database == Database::Streaming
            && self.faults_allowed(w);
        if !lags {
            return None;
        }
        w.database = Database::Lagging(w.standby());
        Some(Outcome::StandbyLags)
    }

    /// A fault: the primary is lost and its standby promoted, on a new timeline. A lagging
    /// standby brings the store back to when it stopped receiving; the leases granted or
    /// renewed since are lost to their holders (who learn it at their next renewal or fence),
    /// and so is every SUCCESS committed since. Every replica's open date transaction is lost
    /// with its connection: that date fails and the run ends.
    pub(crate) fn promote(&self, w: &mut World) -> Option<Outcome> {
        let replication = self.config.failover?;
        if !self.faults_allowed(w) {
            return None;
        }
        let standby = match (replication, w.database) {
            (_, Database::Promoted) => return None,
            // an asynchronous standby that has not lagged yet is promoted as a synchronous one
            // would be: that path is the one through `standby_lags` just before
            (Replication::Asynchronous, Database::Streaming) => return None,
            (Replication::Synchronous, _) => w.standby(),
            (Replication::Asynchronous, Database::Lagging(standby)) => standby,
        };
        w.faults_left -= 1;
        let lost_dates = (0..self.config.dates)
            .filter(|&d| w.settled[usize::from(d)].is_some() && standby.settled[usize::from(d)].is_none())
            .fold(0, |set, d| set | 1 << d);
        w.history.lost_acknowledged |= lost_dates & w.history.acknowledged != 0;
        w.history.forgotten |= lost_leases(&standby.store, &w.store);
        let timeline = w.store.timeline + 1;
        w.store = Store {
            timeline,
            ..standby.store
        };
        w.settled = standby.settled;
        w.successes = standby.successes;
        w.database = Database::Promoted;
        for replica in &mut w.replicas {
            if let Job::Working {
                lease,
                current: Some(_),
                ..
            } = replica.job
            {
                replica.job = Job::Releasing { token: lease.token };
            }
        }
        Some(Outcome::Promoted { timeline, lost_dates })
    }
}

/// The tokens (bit `t` for token `t`) whose leases the promoted store no longer holds as they
/// were: every token granted after the standby stopped receiving, and the standby's own token
/// if a renewal or release of it came after.
fn lost_leases(standby: &Store, primary: &Store) -> u32 {
    let granted_since = (standby.token + 1..=primary.token).fold(0, |set, t| set | 1 << t);
    let changed_since = standby.token > 0 && *standby != *primary && standby.token == primary.token;
    granted_since | u32::from(changed_since) << standby.token
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_after_a_promotion_is_above_every_token_of_the_timeline_before() {
        let back = Store {
            token: 1,
            timeline: 2,
            ..Store::default()
        };
        assert_eq!(next_token(&back, true), TOKENS_PER_TIMELINE + 1);
        assert_eq!(next_token(&back, false), 2, "a plain counter issues 2 again");
        let first = Store::default();
        assert_eq!(next_token(&first, true), 1);
        let later = Store {
            token: TOKENS_PER_TIMELINE + 3,
            ..back
        };
        assert_eq!(next_token(&later, true), TOKENS_PER_TIMELINE + 4);
    }
}

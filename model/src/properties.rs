//! What the protocol promises (CONTRACT §2), as properties of the world.
//!
//! The `always` properties are checked on every reachable state. The one `eventually` property
//! is liveness; stateright checks it on every path that ends in a terminal state (a state with
//! no step left), and the model makes that check exact:
//! - every path is finite and acyclic: time only moves forward and stops at `Config::end`, and
//!   between two ticks every step spends something (a slot, a retry, a fault, a manual run, a
//!   date, a renewal of that tick), so every path ends, at `Config::end`, in a terminal state;
//! - the condition is monotone (a SUCCESS is never removed but by promoting a lagging standby, so
//!   a date counts as settled once the standby has its SUCCESS too; and "no replica stayed up"
//!   stays true once the world ended), so a state's own contents say whether it held earlier on
//!   the path, and joins of paths (stateright's known false negative) lose nothing;
//! - fairness comes from the model: time does not pass while a running replica has a step to
//!   take (`Protocol::urgent`), so a replica that is up cannot be starved.
//!
//! So the property reads: on every complete run of the world, either every date reaches SUCCESS,
//! or no replica stayed up from the end of the faults (`Config::faults_until`) to the end.
//! `sometimes` properties show that the faults really happen in the model: without them a
//! property could hold only because its counterexample is unreachable.

use stateright::Property;

use crate::failover::TOKENS_PER_TIMELINE;
use crate::protocol::Protocol;
use crate::world::{Database, Job, Proc, World};

pub const ONE_SUCCESS_PER_DATE: &str = "at most one SUCCESS per date";
pub const NO_STALE_COMMIT: &str = "no commit by a fencing token that was no longer current";
pub const NOT_BEFORE_ITS_END: &str = "no date settled before it ended by the database's clock";
pub const TOKENS_NEVER_GO_BACK: &str = "fencing tokens never go backwards: each one granted is above every one before";
pub const LEASE_BELIEF: &str = "a replica believes it holds the lease only while the lock store grants it";
pub const STOPS_WHEN_LOST: &str = "a holder whose renewal was refused starts no further date";
pub const ACKNOWLEDGED_SUCCESS_KEPT: &str = "an acknowledged SUCCESS is never lost";
pub const EVERY_DATE_SETTLED: &str = "once faults stop and a replica stays up, every ended date reaches SUCCESS";
pub const TAKEOVER: &str = "sometimes the lock passes to another replica while its holder is paused";
pub const FENCED: &str = "sometimes a stale holder's transaction is fenced";
pub const SETTLED_AFTER_FAULTS: &str = "sometimes every date is settled after a crash and a pause";
pub const UNHEARD_SUCCESS_KEPT: &str = "sometimes every date is settled, one by a commit whose answer was lost";
pub const SETTLED_AFTER_FAILOVER: &str = "sometimes a date is settled on the timeline of a promoted standby";

/// Every property, in the order the reports list them.
pub fn all() -> Vec<Property<Protocol>> {
    vec![
        Property::always(ONE_SUCCESS_PER_DATE, |_, w: &World| w.successes.iter().all(|&n| n <= 1)),
        Property::always(NO_STALE_COMMIT, |_, w: &World| !w.history.stale_commit),
        Property::always(NOT_BEFORE_ITS_END, |_, w: &World| !w.history.settled_early),
        Property::always(TOKENS_NEVER_GO_BACK, |_, w: &World| !w.history.token_went_back),
        Property::always(LEASE_BELIEF, lease_beliefs_hold),
        Property::always(STOPS_WHEN_LOST, |_, w: &World| !w.history.worked_after_refusal),
        Property::always(ACKNOWLEDGED_SUCCESS_KEPT, |_, w: &World| !w.history.lost_acknowledged),
        Property::eventually(EVERY_DATE_SETTLED, every_date_settled_or_nobody_stayed_up),
        Property::sometimes(TAKEOVER, |m: &Protocol, w: &World| {
            w.replicas(m.config.replicas).any(|(r, replica)| {
                replica.proc == Proc::Paused
                    && matches!(replica.job, Job::Working { lease, .. } if lease.token < w.store.token)
                    && usize::from(w.store.holder) != r
            })
        }),
        Property::sometimes(FENCED, |m: &Protocol, w: &World| {
            // a stale holder that met the fence is releasing a token that is not current
            w.replicas(m.config.replicas)
                .any(|(_, replica)| matches!(replica.job, Job::Releasing { token } if token < w.store.token))
                && w.history.highest_token >= 2
        }),
        Property::sometimes(SETTLED_AFTER_FAULTS, |m: &Protocol, w: &World| {
            w.faults_left == 0 && all_settled(m, w)
        }),
        Property::sometimes(UNHEARD_SUCCESS_KEPT, |m: &Protocol, w: &World| {
            let unacknowledged = (0..m.config.dates).any(|d| w.history.acknowledged & 1 << d == 0);
            all_settled(m, w) && unacknowledged
        }),
        Property::sometimes(SETTLED_AFTER_FAILOVER, |_, w: &World| {
            w.settled.iter().flatten().any(|&token| token > TOKENS_PER_TIMELINE)
        }),
    ]
}

/// Every replica that believes it holds the lease (by its keeper's deadline) holds the store's
/// current lease, and the store keeps it at least as long as the replica believes. A lease the
/// store lost is exempt: its holder cannot know until its next renewal, which
/// [`STOPS_WHEN_LOST`] holds to account.
fn lease_beliefs_hold(m: &Protocol, w: &World) -> bool {
    w.replicas(m.config.replicas).all(|(_, replica)| {
        replica.believed_lease(w.now).is_none_or(|lease| {
            (lease.token == w.store.token && lease.deadline <= w.store.locked_until)
                || w.history.forgotten & 1 << lease.token != 0
        })
    })
}

/// Whether every date has its SUCCESS, on the primary and on a standby that stopped receiving:
/// a SUCCESS that a promotion may still take away does not count yet.
fn all_settled(m: &Protocol, w: &World) -> bool {
    let on = |settled: &[Option<u8>]| settled.iter().take(usize::from(m.config.dates)).all(Option::is_some);
    on(&w.settled)
        && match w.database {
            Database::Lagging(standby) => on(&standby.settled),
            Database::Streaming | Database::Promoted => true,
        }
}

fn every_date_settled_or_nobody_stayed_up(m: &Protocol, w: &World) -> bool {
    let stayed_up = w
        .replicas(m.config.replicas)
        .any(|(_, replica)| replica.proc == Proc::Running && replica.up_since <= m.config.faults_until);
    all_settled(m, w) || (w.now == m.config.end && !stayed_up)
}

//! Known protocol bugs the model can be built with. Each one is a step of the real protocol done
//! the way a plausible but wrong implementation would do it; `tests/mutations.rs` shows that the
//! checker catches every one of them, with its counterexample.

/// One seeded bug.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Bug {
    /// The date's transaction commits without checking the fencing token (`fence::guard`).
    NoFenceAtCommit,
    /// A release shortens the lease without checking that the releaser still owns it.
    ReleaseWithoutOwnerCheck,
    /// The lease is counted from the moment the acquisition was sent (the transaction's `now()`),
    /// not from the moment the lock store granted it after waiting on the row.
    LeaseFromBeforeTheWait,
    /// A renewal that finds the lease lost is taken as renewed, and the holder carries on.
    RenewalIgnoresItsLoss,
    /// Dates are judged ended by the replica's own clock: the planner's target comes from the
    /// replica's cron, and no transaction checks the date against the database's clock.
    PlannerTrustsTheReplicaClock,
    /// No unique index on SUCCESS per date: the database accepts a second SUCCESS.
    NoUniqueSuccess,
    /// A lock store that loses its data restarts its fencing counter, instead of numbering the
    /// next acquisition above the token published to PostgreSQL.
    CounterRestartsAfterLoss,
    /// The fencing token is the lock's plain counter, without the database's timeline: a
    /// promotion that lost the counter's tail issues the lost tokens again.
    TokenIgnoresTimeline,
    /// The FAILED record written after a date failed ends the record whatever its status, not
    /// only a RUNNING one: a commit whose answer was lost turns its own SUCCESS into FAILED, and
    /// the date is settled a second time.
    FailedOverwritesSuccess,
}

/// A set of [`Bug`]s; empty for the protocol as it is meant to be.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Bugs(u16);

impl Bugs {
    /// The correct protocol.
    pub const NONE: Bugs = Bugs(0);

    /// Exactly these bugs.
    pub fn of(bugs: &[Bug]) -> Bugs {
        Bugs(bugs.iter().fold(0, |set, &bug| set | Bugs::bit(bug)))
    }

    pub fn has(self, bug: Bug) -> bool {
        self.0 & Bugs::bit(bug) != 0
    }

    fn bit(bug: Bug) -> u16 {
        1 << bug as u8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_holds_exactly_its_bugs() {
        let set = Bugs::of(&[Bug::NoFenceAtCommit, Bug::NoUniqueSuccess]);
        assert!(set.has(Bug::NoFenceAtCommit) && set.has(Bug::NoUniqueSuccess));
        assert!(!set.has(Bug::ReleaseWithoutOwnerCheck));
        assert!(!Bugs::NONE.has(Bug::NoFenceAtCommit));
    }
}

//! The state of the modelled world: one clock, one lock store, the execution records, the
//! database's standby, and the replicas with their program counters.
//!
//! Time is coarse: a tick is a third of a lease or so, and business date `d` ends at tick
//! `(d + 1) * DAY`. Every number is small (`u8`) and every collection a fixed array, so a state
//! is cheap to hash and copy: the checker visits millions of them.

/// The most replicas and business dates a world holds; a [`crate::Config`] uses a prefix.
pub const MAX_REPLICAS: usize = 3;
pub const MAX_DATES: usize = 3;

/// Ticks per business date: date `d` ends at tick `(d + 1) * DAY`, and every replica's cron has a
/// slot at each such tick of its own clock.
pub const DAY: u8 = 2;

/// The first tick at which business date `date` has ended.
pub fn end_of(date: u8) -> u8 {
    (date + 1) * DAY
}

/// The cron slot a clock reading falls in: slot `k` starts at tick `k * DAY` and settles date
/// `k - 1`. A clock behind the database's reads before tick 0 as slot 0.
pub fn slot_at(clock: i16) -> u8 {
    u8::try_from(clock.max(0) / i16::from(DAY)).unwrap_or(u8::MAX)
}

/// The whole world.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct World {
    /// The lock store's and the database's clock (one clock: the lock times and "today" both come
    /// from the store, never a replica, CONTRACT §1.1).
    pub now: u8,
    pub store: Store,
    /// Per business date, the fencing token of its SUCCESS, if any.
    pub settled: [Option<u8>; MAX_DATES],
    /// Per business date, how many SUCCESS records were committed (the property counts these).
    pub successes: [u8; MAX_DATES],
    pub replicas: [Replica; MAX_REPLICAS],
    /// Faults the world may still suffer (crash, pause, a refused commit).
    pub faults_left: u8,
    /// Operators' manual runs still to come.
    pub manual_left: u8,
    /// Where the database's standby is, for a failover (`crate::failover`).
    pub database: Database,
    /// History the properties need, set once and never cleared.
    pub history: History,
}

/// The lock store's record of the job's lock (the `task_lock` row, or the Redis key and counter).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Store {
    /// The current fencing token, 0 before the first acquisition. Each acquisition has its own
    /// token, so it also serves as the owner token.
    pub token: u8,
    /// The database's timeline: 1, and one more after each promotion of a standby. The next
    /// token is numbered above every token of the earlier timelines (`failover::next_token`).
    pub timeline: u8,
    pub locked_at: u8,
    /// The lease covers the ticks before this one: the lock is free once `now >= locked_until`.
    pub locked_until: u8,
    /// Which replica took it last (for people reading a counterexample).
    pub holder: u8,
}

impl Default for Store {
    /// The store before the first acquisition, on the database's first timeline.
    fn default() -> Self {
        Store {
            token: 0,
            timeline: 1,
            locked_at: 0,
            locked_until: 0,
            holder: 0,
        }
    }
}

/// The database's standby, which a failover promotes (at most once a run).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Database {
    /// The standby has every commit so far (always so with synchronous replication).
    Streaming,
    /// Asynchronous replication only: the standby stopped receiving at this state, and every
    /// commit since was acknowledged by the primary alone.
    Lagging(Standby),
    /// The standby was promoted; the new primary streams to a standby of its own.
    Promoted,
}

/// What a lagging standby holds: the lock store and the SUCCESS records as they were when it
/// stopped receiving.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Standby {
    pub store: Store,
    pub settled: [Option<u8>; MAX_DATES],
    pub successes: [u8; MAX_DATES],
}

/// What happened once and must be remembered for a property to see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct History {
    /// The highest fencing token ever granted.
    pub highest_token: u8,
    /// A grant handed out a token no greater than one granted before (so possibly the same one:
    /// two holders would pass the fence).
    pub token_went_back: bool,
    /// A commit carried a fencing token that was no longer the current one.
    pub stale_commit: bool,
    /// A date's SUCCESS was committed before the date ended by the database's clock.
    pub settled_early: bool,
    /// A replica started a date after the lock store had refused to renew its lease.
    pub worked_after_refusal: bool,
    /// The tokens whose leases the lock store lost (bit `t` for token `t`).
    pub forgotten: u32,
    /// The dates whose SUCCESS commit was acknowledged to a replica (bit `d` for date `d`).
    pub acknowledged: u8,
    /// A promotion lost a SUCCESS that had been acknowledged.
    pub lost_acknowledged: bool,
}

/// One replica: a `finesettle serve` process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Replica {
    pub proc: Proc,
    /// The tick it last came up (started, resumed, restarted): the liveness property asks for a
    /// replica that stayed up after the faults stopped.
    pub up_since: u8,
    /// How far its own clock is ahead of the database's (negative: behind), in ticks.
    pub skew: i8,
    /// The latest cron slot it fired for (or dropped as BUSY): each slot fires once.
    pub last_slot: u8,
    /// A fire that met a held lock tries again at this tick (CONTRACT §2.2), until the next slot.
    pub retry_at: Option<u8>,
    pub job: Job,
}

/// Whether the process runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Proc {
    Running,
    /// Stopped (GC, SIGSTOP, a migrated VM, a request waiting on the lock row): takes no step,
    /// while time and its lease run on.
    Paused,
    /// Killed: its lease stays in the store until it expires.
    Crashed,
}

/// What started a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Trigger {
    /// The replica's cron, its start-up fire, or a held fire trying again.
    Cron,
    /// An operator's run of one date (which settles the earlier unsettled dates first).
    Manual,
}

/// Where a replica is in one fire of the job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Job {
    Idle,
    /// The acquisition is sent (at `asked_at`) and waits for the lock store's answer.
    Acquiring {
        asked_at: u8,
        target: u8,
        trigger: Trigger,
    },
    /// Holding (or believing it holds) the lease of `token`, walking the planned `dates`
    /// (a bit set, oldest first); `current` is the date whose RUNNING record is written and whose
    /// transaction is open, and `since` the tick it started.
    Working {
        lease: Held,
        dates: u8,
        current: Option<u8>,
        since: u8,
    },
    /// The run is over; the lease of `token` is still to be released.
    Releasing {
        token: u8,
    },
}

/// A replica's view of its lease, kept by its `LeaseKeeper`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Held {
    pub token: u8,
    /// When the lease runs out by the replica's own monotonic clock (ticks pass at the same rate
    /// for every clock; only the offset of a replica's wall clock is off).
    pub deadline: u8,
    /// The keeper gave the lease up; the walk stops at its next check.
    pub lost: bool,
    /// The tick of the keeper's last renewal (it renews at least once a tick).
    pub renewed_at: u8,
    /// The lock store refused a renewal: the lease is gone, whatever the keeper made of it.
    pub refused: bool,
}

impl World {
    /// Whether `date` has ended by the database's clock.
    pub fn has_ended(&self, date: u8) -> bool {
        self.now >= end_of(date)
    }

    /// Whether the store's lease is over (or was never taken).
    pub fn lock_is_free(&self) -> bool {
        self.now >= self.store.locked_until
    }

    /// The replicas of this world, by index.
    pub fn replicas(&self, count: u8) -> impl Iterator<Item = (usize, &Replica)> {
        self.replicas.iter().take(usize::from(count)).enumerate()
    }
}

impl Replica {
    /// A replica running since tick 0 whose clock is `skew` ticks off.
    pub fn new(skew: i8) -> Self {
        Replica {
            proc: Proc::Running,
            up_since: 0,
            skew,
            last_slot: slot_at(i16::from(skew)),
            retry_at: None,
            job: Job::Idle,
        }
    }

    /// The cron slot its own clock is in at database tick `now`.
    pub fn slot(&self, now: u8) -> u8 {
        slot_at(i16::from(now) + i16::from(self.skew))
    }

    /// The lease it believes it holds at `now`: held, not given up, and not past its deadline by
    /// its own clock.
    pub fn believed_lease(&self, now: u8) -> Option<Held> {
        match self.job {
            Job::Working { lease, .. } if !lease.lost && now < lease.deadline => Some(lease),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_end_at_their_slot_and_clocks_behind_read_as_slot_zero() {
        assert_eq!(end_of(0), DAY);
        assert_eq!(slot_at(i16::from(DAY) - 1), 0);
        assert_eq!(slot_at(i16::from(DAY)), 1);
        assert_eq!(slot_at(-1), 0);
    }
}

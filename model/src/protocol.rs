//! The steps of the protocol and what each one does to the world.
//!
//! A replica's steps follow `jobs::SettleJob` and `settlement::walk`: fire (cron, start-up, a held
//! fire again, or an operator's run), ask the lock store, plan the dates under the lock, and for
//! each date a fenced RUNNING record, then the date's transaction (fence, SUCCESS, commit); the
//! keeper renews alongside; at the end the lease is released. The lock store answers from its own
//! clock. Faults are steps too, taken while the world has faults left.
//!
//! **Time.** A replica's steps take no time, and time does not pass while a running replica has
//! one to take ([`Protocol::urgent`]): a delay in the middle of a step is a pause, a fault of its
//! own. The one exception is the work of a date: time may pass between a date's RUNNING record
//! and its commit (a date longer than the lease), while the keeper renews at every tick. This
//! keeps the interleavings that matter and makes the model fair: a replica that is up always
//! gets to take its steps.

use stateright::{Model, Property};

use crate::bugs::{Bug, Bugs};
use crate::failover::Replication;
use crate::properties;
use crate::world::{Database, Held, Job, MAX_DATES, MAX_REPLICAS, Proc, Replica, World, end_of};

/// The size of the world and its bounds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Replicas, 2 or 3.
    pub replicas: u8,
    /// Business dates, at most [`MAX_DATES`]; date `d` ends at tick `end_of(d)`.
    pub dates: u8,
    /// `FINESETTLE_LOCK_AT_MOST_FOR`, in ticks.
    pub lease: u8,
    /// `FINESETTLE_LOCK_AT_LEAST_FOR`, in ticks.
    pub at_least: u8,
    /// How many faults (crash, pause, refused commit, lost answer, promotion) the world may
    /// suffer.
    pub faults: u8,
    /// Disturbances happen only before this tick: faults, their ends (a resume, a restart) and
    /// operators' runs. After it the world is calm: whoever runs keeps running, whoever is down
    /// or paused stays so. (A late disturbance would hold the lock past the end of a bounded
    /// world, and the liveness property would blame the horizon, not the protocol.)
    pub faults_until: u8,
    /// Operators' manual runs.
    pub manual_runs: u8,
    /// The longest a date's work takes, in ticks (a date may outlast the lease it started with).
    pub date_ticks: u8,
    /// The last tick; the world ends once nothing is left to do at it.
    pub end: u8,
    /// The clock offsets (ticks) replica 0 may start with; the others' clocks are right.
    pub skews: Vec<i8>,
    /// Whether the database may fail over (once), and how it replicates to the standby it
    /// promotes; `None`: it never fails over.
    pub failover: Option<Replication>,
}

impl Config {
    /// The world CI checks exhaustively: two replicas, two dates, two faults, one manual run,
    /// replica 0's clock right, a tick ahead, or a tick behind, and a database that may fail over
    /// to a synchronous standby.
    pub fn checked() -> Self {
        Config {
            replicas: 2,
            dates: 2,
            lease: 2,
            at_least: 1,
            faults: 2,
            faults_until: 5,
            manual_runs: 1,
            date_ticks: 2,
            end: 8,
            skews: vec![0, 1, -1],
            failover: Some(Replication::Synchronous),
        }
    }

    /// [`Config::checked`] with asynchronous replication: a promotion may lose the tail of the
    /// commits. Every clock is right: clock offsets are the synchronous world's to check (a
    /// failover moves no clock), and the lagging standby multiplies the states (10 million
    /// unique with the three offsets, 3.6 million without).
    pub fn asynchronous() -> Self {
        Config {
            failover: Some(Replication::Asynchronous),
            skews: vec![0],
            ..Config::checked()
        }
    }

    /// The world `tests/it/lock/conformance.rs` replays against the real stores: three replicas and
    /// more faults, since a walk visits only one path. Every clock is right: the check that a
    /// date has ended by the database's clock is the one step a replay cannot drive, since the
    /// real database's clock cannot be moved (the replay moves the stored lock times instead).
    /// Nor can the real database fail over in that test: no promotion.
    pub fn replayed() -> Self {
        Config {
            replicas: 3,
            dates: 3,
            faults: 4,
            faults_until: 8,
            skews: vec![0],
            failover: None,
            ..Config::checked()
        }
    }
}

/// One step of the world.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// The clock moves one tick.
    Tick,
    /// Replica `r`'s cron (or start-up, or held) fire sends its acquisition.
    Fire(usize),
    /// An operator asks replica `r` to settle date `d`.
    Manual(usize, u8),
    /// The lock store answers replica `r`'s acquisition.
    Answer(usize),
    /// Replica `r`'s keeper renews its lease.
    Renew(usize),
    /// Replica `r` checks its lease token and starts its next date: a fenced RUNNING record.
    Begin(usize),
    /// Replica `r` commits its date's transaction (fence, SUCCESS).
    Commit(usize),
    /// The database refuses replica `r`'s date transaction (a fault); the run ends.
    Refuse(usize),
    /// The lock store loses the lease (a fault: a Redis restart without persistence, a failover
    /// to a replica that lagged). The lock is free at once; the fencing token survives, since the
    /// token published to PostgreSQL is the floor of the next one.
    Forget,
    /// The lock store grants replica `r`'s acquisition, but the answer is lost (a fault).
    GrantUnheard(usize),
    /// The database commits (or fences) replica `r`'s date transaction, but the answer is lost
    /// (a fault); the replica takes the date as failed.
    CommitUnheard(usize),
    /// Asynchronous replication: the standby stops receiving (not a fault on its own).
    StandbyLags,
    /// The database fails over to its standby (a fault, once a run).
    Promote,
    /// Replica `r` releases its lease (owner-checked, honouring at-least-for).
    Release(usize),
    Pause(usize),
    Resume(usize),
    Crash(usize),
    Restart(usize),
}

/// What a step answered: what the real code answers for the same step, so that a replay can
/// compare them (`tests/it/lock/conformance.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    Ticked,
    /// An acquisition sent for dates up to `target`.
    Asked {
        target: u8,
    },
    /// The lock was taken: `token`, lease until `until`, and the planned dates (a bit set).
    Taken {
        token: u8,
        until: u8,
        dates: u8,
    },
    /// Someone holds the lock until `until`.
    Held {
        until: u8,
    },
    Renewed {
        until: u8,
    },
    /// The store refused the renewal: the lease was taken over or had expired.
    RenewalLost,
    /// The keeper's deadline passed before it could renew; it gives the lease up.
    GaveUp,
    /// A RUNNING record for `date`.
    Running {
        date: u8,
    },
    AlreadySettled {
        date: u8,
    },
    /// The fence refused the transaction: the token is no longer current.
    Fenced,
    /// The date has not ended by the database's clock: nothing recorded.
    NotEnded {
        date: u8,
    },
    /// The walk stops: the lease was lost, or no date is left.
    Stopped,
    /// The date's SUCCESS committed.
    Recorded {
        date: u8,
    },
    /// The unique SUCCESS index refused the commit.
    Duplicate {
        date: u8,
    },
    /// The database refused the commit; the date is rolled back and recorded FAILED.
    Refused {
        date: u8,
    },
    /// The lock store lost the lease of `token`.
    Forgot {
        token: u8,
    },
    /// The store granted `token` until `until`; the replica did not hear it.
    GrantUnheard {
        token: u8,
        until: u8,
    },
    /// The database committed `date`'s transaction (`committed`), or refused it; the replica
    /// did not hear which.
    CommitUnheard {
        date: u8,
        committed: bool,
    },
    StandbyLags,
    /// The standby became the primary on `timeline`, without the SUCCESS of `lost_dates` (a bit
    /// set).
    Promoted {
        timeline: u8,
        lost_dates: u8,
    },
    /// The release was accepted by the owner check (`false`: the lease was no longer this one's).
    Released {
        owned: bool,
    },
    Paused,
    Resumed,
    Crashed,
    Restarted,
}

/// The protocol as a stateright model: a [`Config`] and the [`Bugs`] it is built with.
#[derive(Debug, Clone)]
pub struct Protocol {
    pub config: Config,
    pub bugs: Bugs,
}

impl Protocol {
    /// The correct protocol on `config`.
    pub fn new(config: Config) -> Self {
        Protocol {
            config,
            bugs: Bugs::NONE,
        }
    }

    /// The protocol with `bugs` seeded.
    pub fn with_bugs(config: Config, bugs: &[Bug]) -> Self {
        Protocol {
            config,
            bugs: Bugs::of(bugs),
        }
    }

    pub(crate) fn has(&self, bug: Bug) -> bool {
        self.bugs.has(bug)
    }

    pub(crate) fn faults_allowed(&self, w: &World) -> bool {
        w.faults_left > 0 && w.now < self.config.faults_until
    }

    /// The dates up to `target` without SUCCESS (a bit set): gaps filled, oldest first.
    pub fn plan(&self, w: &World, target: u8) -> u8 {
        let last = target.min(self.config.dates - 1);
        (0..=last)
            .filter(|&d| w.settled[usize::from(d)].is_none())
            .fold(0, |set, d| set | 1 << d)
    }

    /// Whether replica `r` has a step it takes without letting time pass.
    pub fn urgent(&self, w: &World, r: usize) -> bool {
        let replica = &w.replicas[r];
        if replica.proc != Proc::Running {
            return false;
        }
        match replica.job {
            Job::Idle => self.fire_target(w, replica).is_some(),
            Job::Acquiring { .. } | Job::Releasing { .. } => true,
            Job::Working {
                lease, current, since, ..
            } => current.is_none() || w.now >= since + self.config.date_ticks || self.renewal_due(w, lease),
        }
    }

    pub(crate) fn renewal_due(&self, w: &World, lease: Held) -> bool {
        !lease.lost && lease.renewed_at < w.now
    }

    /// The target of the fire replica `replica` is due for at `w.now`, if any: a new cron slot
    /// of its own clock, or a held (or start-up) fire trying again.
    pub fn fire_target(&self, w: &World, replica: &Replica) -> Option<u8> {
        let slot = replica.slot(w.now);
        let due = slot > replica.last_slot || replica.retry_at.is_some_and(|at| at <= w.now);
        // slot k settles the date before it, k - 1
        (due && slot > 0).then(|| slot - 1)
    }

    /// The world after `action`, and what the step answered; `None` when the step is not enabled.
    pub fn step(&self, w: &World, action: Action) -> Option<(World, Outcome)> {
        let mut next = *w;
        let outcome = match action {
            Action::Tick => {
                let waiting = (0..usize::from(self.config.replicas)).any(|r| self.urgent(w, r));
                if w.now >= self.config.end || waiting {
                    return None;
                }
                next.now += 1;
                Outcome::Ticked
            }
            Action::Fire(r) => self.fire(&mut next, r)?,
            Action::Manual(r, date) => self.manual(&mut next, r, date)?,
            Action::Answer(r) => self.answer(&mut next, r)?,
            Action::Renew(r) => self.renew(&mut next, r)?,
            Action::Begin(r) => self.begin(&mut next, r)?,
            Action::Commit(r) => self.commit(&mut next, r)?,
            Action::Refuse(r) => self.refuse(&mut next, r)?,
            Action::Forget => self.forget(&mut next)?,
            Action::GrantUnheard(r) => self.grant_unheard(&mut next, r)?,
            Action::CommitUnheard(r) => self.commit_unheard(&mut next, r)?,
            Action::StandbyLags => self.standby_lags(&mut next)?,
            Action::Promote => self.promote(&mut next)?,
            Action::Release(r) => self.release(&mut next, r)?,
            Action::Pause(r) | Action::Resume(r) | Action::Crash(r) | Action::Restart(r) => {
                self.process(&mut next, action, r)?
            }
        };
        // A standby that can no longer be promoted loses nothing: the world is as if it streamed.
        if matches!(next.database, Database::Lagging(_)) && !self.faults_allowed(&next) {
            next.database = Database::Streaming;
        }
        Some((next, outcome))
    }
}

impl Model for Protocol {
    type State = World;
    type Action = Action;

    fn init_states(&self) -> Vec<World> {
        assert!(usize::from(self.config.replicas) <= MAX_REPLICAS, "too many replicas");
        assert!(usize::from(self.config.dates) <= MAX_DATES, "too many dates");
        assert!(
            end_of(self.config.dates - 1) <= self.config.end,
            "a date ends after the world"
        );
        self.config
            .skews
            .iter()
            .map(|&skew| {
                let mut replicas = [Replica::new(0); MAX_REPLICAS];
                replicas[0] = Replica::new(skew);
                World {
                    now: 0,
                    store: Default::default(),
                    settled: [None; MAX_DATES],
                    successes: [0; MAX_DATES],
                    replicas,
                    faults_left: self.config.faults,
                    manual_left: self.config.manual_runs,
                    database: Database::Streaming,
                    history: Default::default(),
                }
            })
            .collect()
    }

    fn actions(&self, _w: &World, actions: &mut Vec<Action>) {
        actions.extend([Action::Tick, Action::Forget, Action::StandbyLags, Action::Promote]);
        for r in 0..usize::from(self.config.replicas) {
            actions.extend([
                Action::Fire(r),
                Action::Answer(r),
                Action::Renew(r),
                Action::Begin(r),
                Action::Commit(r),
                Action::Refuse(r),
                Action::GrantUnheard(r),
                Action::CommitUnheard(r),
                Action::Release(r),
                Action::Pause(r),
                Action::Resume(r),
                Action::Crash(r),
                Action::Restart(r),
            ]);
            actions.extend((0..self.config.dates).map(|d| Action::Manual(r, d)));
        }
    }

    fn next_state(&self, w: &World, action: Action) -> Option<World> {
        self.step(w, action).map(|(next, _)| next)
    }

    fn format_step(&self, w: &World, action: Action) -> Option<String> {
        self.step(w, action)
            .map(|(next, outcome)| crate::story::line(w, action, outcome, &next))
    }

    fn properties(&self) -> Vec<Property<Self>> {
        properties::all()
    }
}

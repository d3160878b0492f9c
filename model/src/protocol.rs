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
use crate::properties;
use crate::world::{Held, Job, MAX_DATES, MAX_REPLICAS, Proc, Replica, Trigger, World, end_of};

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
    /// How many faults (crash, pause, refused commit) the world may suffer.
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
}

impl Config {
    /// The world CI checks exhaustively: two replicas, two dates, two faults, one manual run, and
    /// replica 0's clock right, a tick ahead, or a tick behind.
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
        }
    }

    /// The world `tests/lock/conformance.rs` replays against the real stores: three replicas and
    /// more faults, since a walk visits only one path. Every clock is right: the check that a
    /// date has ended by the database's clock is the one step a replay cannot drive, since the
    /// real database's clock cannot be moved (the replay moves the stored lock times instead).
    pub fn replayed() -> Self {
        Config {
            replicas: 3,
            dates: 3,
            faults: 4,
            faults_until: 8,
            skews: vec![0],
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
    /// Replica `r` releases its lease (owner-checked, honouring at-least-for).
    Release(usize),
    Pause(usize),
    Resume(usize),
    Crash(usize),
    Restart(usize),
}

/// What a step answered: what the real code answers for the same step, so that a replay can
/// compare them (`tests/lock/conformance.rs`).
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

    fn has(&self, bug: Bug) -> bool {
        self.bugs.has(bug)
    }

    fn faults_allowed(&self, w: &World) -> bool {
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

    fn renewal_due(&self, w: &World, lease: Held) -> bool {
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
            Action::Release(r) => self.release(&mut next, r)?,
            Action::Pause(r) | Action::Resume(r) | Action::Crash(r) | Action::Restart(r) => {
                self.process(&mut next, action, r)?
            }
        };
        Some((next, outcome))
    }

    fn running(w: &World, r: usize) -> Option<&Replica> {
        let replica = &w.replicas[r];
        (replica.proc == Proc::Running).then_some(replica)
    }

    fn fire(&self, w: &mut World, r: usize) -> Option<Outcome> {
        let replica = Self::running(w, r)?;
        if replica.job != Job::Idle {
            return None;
        }
        let target = self.fire_target(w, replica)?;
        let slot = replica.slot(w.now);
        let now = w.now;
        let replica = &mut w.replicas[r];
        replica.last_slot = slot;
        replica.retry_at = None;
        replica.job = Job::Acquiring {
            asked_at: now,
            target,
            trigger: Trigger::Cron,
        };
        Some(Outcome::Asked { target })
    }

    /// An operator's run: only an ended date (by the database's "today") that has no SUCCESS yet
    /// (the API answers `already_settled` without the lock otherwise), on an idle replica (a busy
    /// one answers `job_running`).
    fn manual(&self, w: &mut World, r: usize, date: u8) -> Option<Outcome> {
        let replica = Self::running(w, r)?;
        let allowed = w.manual_left > 0
            && w.now < self.config.faults_until
            && replica.job == Job::Idle
            && date < self.config.dates
            && w.has_ended(date)
            && w.settled[usize::from(date)].is_none();
        if !allowed {
            return None;
        }
        w.manual_left -= 1;
        w.replicas[r].job = Job::Acquiring {
            asked_at: w.now,
            target: date,
            trigger: Trigger::Manual,
        };
        Some(Outcome::Asked { target: date })
    }

    /// The lock store takes the lock when it is free or expired by its own clock, counting the
    /// lease from the moment it grants it; then the winner plans its dates under the lock.
    fn answer(&self, w: &mut World, r: usize) -> Option<Outcome> {
        let Job::Acquiring {
            asked_at,
            target,
            trigger,
        } = Self::running(w, r)?.job
        else {
            return None;
        };
        if !w.lock_is_free() {
            let until = w.store.locked_until;
            let replica = &mut w.replicas[r];
            replica.job = Job::Idle;
            if trigger == Trigger::Cron {
                replica.retry_at = Some(until);
            }
            return Some(Outcome::Held { until });
        }
        let counted_from = if self.has(Bug::LeaseFromBeforeTheWait) {
            asked_at
        } else {
            w.now
        };
        let token = w.store.token + 1;
        assert!(token < 16, "tokens are bits of History::forgotten");
        w.store.token = token;
        w.store.locked_at = counted_from;
        w.store.locked_until = counted_from + self.config.lease;
        w.store.holder = r as u8;
        w.history.highest_token = w.history.highest_token.max(token);
        // The keeper counts the granted duration from the answer, by the replica's own clock.
        let granted = w.store.locked_until - w.store.locked_at;
        let lease = Held {
            token,
            deadline: w.now + granted,
            lost: false,
            renewed_at: w.now,
            refused: false,
        };
        let dates = self.plan(w, target);
        w.replicas[r].job = if dates == 0 {
            Job::Releasing { token }
        } else {
            Job::Working {
                lease,
                dates,
                current: None,
                since: w.now,
            }
        };
        Some(Outcome::Taken {
            token,
            until: w.store.locked_until,
            dates,
        })
    }

    /// The keeper: past its deadline it gives up without asking; otherwise the store extends the
    /// lease only while it is still this acquisition's and not expired.
    fn renew(&self, w: &mut World, r: usize) -> Option<Outcome> {
        let Job::Working {
            mut lease,
            dates,
            current,
            since,
        } = Self::running(w, r)?.job
        else {
            return None;
        };
        if !self.renewal_due(w, lease) {
            return None;
        }
        lease.renewed_at = w.now;
        let outcome = if w.now >= lease.deadline {
            lease.lost = true;
            Outcome::GaveUp
        } else if w.store.token == lease.token && w.store.locked_until > w.now {
            w.store.locked_until = w.now + self.config.lease;
            lease.deadline = w.now + self.config.lease;
            Outcome::Renewed {
                until: w.store.locked_until,
            }
        } else {
            lease.refused = true;
            if self.has(Bug::RenewalIgnoresItsLoss) {
                lease.deadline = w.now + self.config.lease;
            } else {
                lease.lost = true;
            }
            Outcome::RenewalLost
        };
        w.replicas[r].job = Job::Working {
            lease,
            dates,
            current,
            since,
        };
        Some(outcome)
    }

    /// Between dates: stop if the lease was lost or nothing is left; otherwise the next date's
    /// RUNNING record, in a fenced transaction that also checks the date has ended by the
    /// database's clock.
    fn begin(&self, w: &mut World, r: usize) -> Option<Outcome> {
        let Job::Working {
            lease,
            dates,
            current: None,
            ..
        } = Self::running(w, r)?.job
        else {
            return None;
        };
        let stop = Job::Releasing { token: lease.token };
        if lease.lost || dates == 0 {
            w.replicas[r].job = stop;
            return Some(Outcome::Stopped);
        }
        let date = dates.trailing_zeros() as u8;
        if w.store.token != lease.token {
            w.replicas[r].job = stop;
            return Some(Outcome::Fenced);
        }
        if !w.has_ended(date) && !self.has(Bug::PlannerTrustsTheReplicaClock) {
            w.replicas[r].job = stop;
            return Some(Outcome::NotEnded { date });
        }
        if w.settled[usize::from(date)].is_some() {
            w.replicas[r].job = Job::Working {
                lease,
                dates: dates & !(1 << date),
                current: None,
                since: w.now,
            };
            return Some(Outcome::AlreadySettled { date });
        }
        w.history.worked_after_refusal |= lease.refused;
        w.replicas[r].job = Job::Working {
            lease,
            dates,
            current: Some(date),
            since: w.now,
        };
        Some(Outcome::Running { date })
    }

    /// The date's transaction: fence, SUCCESS (under the unique index), commit.
    fn commit(&self, w: &mut World, r: usize) -> Option<Outcome> {
        let Job::Working {
            lease,
            dates,
            current: Some(date),
            ..
        } = Self::running(w, r)?.job
        else {
            return None;
        };
        let stop = Job::Releasing { token: lease.token };
        let stale = w.store.token != lease.token;
        if stale && !self.has(Bug::NoFenceAtCommit) {
            w.replicas[r].job = stop;
            return Some(Outcome::Fenced);
        }
        let d = usize::from(date);
        if w.settled[d].is_some() && !self.has(Bug::NoUniqueSuccess) {
            w.replicas[r].job = stop;
            return Some(Outcome::Duplicate { date });
        }
        w.settled[d] = Some(lease.token);
        w.successes[d] += 1;
        w.history.stale_commit |= stale;
        w.history.settled_early |= !w.has_ended(date);
        w.replicas[r].job = Job::Working {
            lease,
            dates: dates & !(1 << date),
            current: None,
            since: w.now,
        };
        Some(Outcome::Recorded { date })
    }

    /// A fault: the database refuses the date's transaction. The date rolls back, is recorded
    /// FAILED, and the run ends (CONTRACT §2.6).
    fn refuse(&self, w: &mut World, r: usize) -> Option<Outcome> {
        let Job::Working {
            lease,
            current: Some(date),
            ..
        } = Self::running(w, r)?.job
        else {
            return None;
        };
        if !self.faults_allowed(w) {
            return None;
        }
        w.faults_left -= 1;
        w.replicas[r].job = Job::Releasing { token: lease.token };
        Some(Outcome::Refused { date })
    }

    /// A fault: the lock store loses a live lease; the lock is free from now on.
    fn forget(&self, w: &mut World) -> Option<Outcome> {
        if !self.faults_allowed(w) || w.lock_is_free() {
            return None;
        }
        w.faults_left -= 1;
        w.store.locked_until = w.now;
        w.history.forgotten |= 1 << w.store.token;
        let token = w.store.token;
        if self.has(Bug::CounterRestartsAfterLoss) {
            w.store.token = 0;
        }
        Some(Outcome::Forgot { token })
    }

    /// Owner-checked release keeping the lock until `at_least` after it was taken, never longer
    /// than it was. Fires that came while the replica was busy were dropped (BUSY).
    fn release(&self, w: &mut World, r: usize) -> Option<Outcome> {
        let Job::Releasing { token } = Self::running(w, r)?.job else {
            return None;
        };
        let owned = w.store.token == token;
        if owned || self.has(Bug::ReleaseWithoutOwnerCheck) {
            let kept = w.now.max(w.store.locked_at + self.config.at_least);
            w.store.locked_until = w.store.locked_until.min(kept);
        }
        let slot = w.replicas[r].slot(w.now);
        let replica = &mut w.replicas[r];
        replica.job = Job::Idle;
        replica.last_slot = replica.last_slot.max(slot);
        Some(Outcome::Released { owned })
    }

    /// Faults (pause, crash) and their ends (resume, restart), all before `faults_until`. A
    /// restarted replica is a new process: it forgot its run, and fires once at start.
    fn process(&self, w: &mut World, action: Action, r: usize) -> Option<Outcome> {
        let now = w.now;
        let fault = matches!(action, Action::Pause(_) | Action::Crash(_));
        if (fault && !self.faults_allowed(w)) || now >= self.config.faults_until {
            return None;
        }
        let replica = &mut w.replicas[r];
        let outcome = match (action, replica.proc) {
            (Action::Pause(_), Proc::Running) => {
                replica.proc = Proc::Paused;
                Outcome::Paused
            }
            (Action::Resume(_), Proc::Paused) => {
                replica.proc = Proc::Running;
                replica.up_since = now;
                Outcome::Resumed
            }
            (Action::Crash(_), Proc::Running | Proc::Paused) => {
                replica.proc = Proc::Crashed;
                replica.job = Job::Idle;
                replica.retry_at = None;
                Outcome::Crashed
            }
            (Action::Restart(_), Proc::Crashed) => {
                *replica = Replica {
                    up_since: now,
                    last_slot: replica.slot(now),
                    retry_at: Some(now),
                    ..Replica::new(replica.skew)
                };
                Outcome::Restarted
            }
            _ => return None,
        };
        if fault {
            w.faults_left -= 1;
        }
        Some(outcome)
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
                    history: Default::default(),
                }
            })
            .collect()
    }

    fn actions(&self, _w: &World, actions: &mut Vec<Action>) {
        actions.extend([Action::Tick, Action::Forget]);
        for r in 0..usize::from(self.config.replicas) {
            actions.extend([
                Action::Fire(r),
                Action::Answer(r),
                Action::Renew(r),
                Action::Begin(r),
                Action::Commit(r),
                Action::Refuse(r),
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

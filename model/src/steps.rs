//! What each step of a replica, of the lock store and of a fault does to the world: one method
//! per [`Action`], each answering `None` when the step is not enabled. [`Protocol::step`]
//! dispatches to them.

use crate::bugs::Bug;
use crate::failover::next_token;
use crate::protocol::{Action, Outcome, Protocol};
use crate::world::{Held, Job, Proc, Replica, Trigger, World};

impl Protocol {
    pub(crate) fn running(w: &World, r: usize) -> Option<&Replica> {
        let replica = &w.replicas[r];
        (replica.proc == Proc::Running).then_some(replica)
    }

    pub(crate) fn fire(&self, w: &mut World, r: usize) -> Option<Outcome> {
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
    pub(crate) fn manual(&self, w: &mut World, r: usize, date: u8) -> Option<Outcome> {
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
    pub(crate) fn answer(&self, w: &mut World, r: usize) -> Option<Outcome> {
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
        let lease = self.grant(w, r, asked_at);
        let token = lease.token;
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

    /// The lock store's half of an acquisition of the free lock, asked at `asked_at`: the next
    /// token and the lease; and the lease as the replica's keeper will count it, should the answer
    /// reach it.
    pub(crate) fn grant(&self, w: &mut World, r: usize, asked_at: u8) -> Held {
        let counted_from = if self.has(Bug::LeaseFromBeforeTheWait) {
            asked_at
        } else {
            w.now
        };
        let token = next_token(&w.store, !self.has(Bug::TokenIgnoresTimeline));
        assert!(token < 32, "tokens are bits of History::forgotten");
        w.store.token = token;
        w.store.locked_at = counted_from;
        w.store.locked_until = counted_from + self.config.lease;
        w.store.holder = r as u8;
        w.history.token_went_back |= token <= w.history.highest_token;
        w.history.highest_token = w.history.highest_token.max(token);
        // The keeper counts the granted duration from the answer, by the replica's own clock.
        let granted = w.store.locked_until - w.store.locked_at;
        Held {
            token,
            deadline: w.now + granted,
            lost: false,
            renewed_at: w.now,
            refused: false,
        }
    }

    /// The keeper: past its deadline it gives up without asking; otherwise the store extends the
    /// lease only while it is still this acquisition's and not expired.
    pub(crate) fn renew(&self, w: &mut World, r: usize) -> Option<Outcome> {
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
    pub(crate) fn begin(&self, w: &mut World, r: usize) -> Option<Outcome> {
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
    pub(crate) fn commit(&self, w: &mut World, r: usize) -> Option<Outcome> {
        let Job::Working {
            lease,
            dates,
            current: Some(date),
            ..
        } = Self::running(w, r)?.job
        else {
            return None;
        };
        let outcome = self.commit_in_store(w, lease.token, date);
        w.replicas[r].job = if let Outcome::Recorded { date } = outcome {
            w.history.acknowledged |= 1 << date;
            Job::Working {
                lease,
                dates: dates & !(1 << date),
                current: None,
                since: w.now,
            }
        } else {
            Job::Releasing { token: lease.token }
        };
        Some(outcome)
    }

    /// The database's half of the date's transaction under `token`: the fence, the SUCCESS
    /// under the unique index, the commit. Answers `Recorded`, `Fenced` or `Duplicate`.
    pub(crate) fn commit_in_store(&self, w: &mut World, token: u8, date: u8) -> Outcome {
        let stale = w.store.token != token;
        if stale && !self.has(Bug::NoFenceAtCommit) {
            return Outcome::Fenced;
        }
        let d = usize::from(date);
        if w.settled[d].is_some() && !self.has(Bug::NoUniqueSuccess) {
            return Outcome::Duplicate { date };
        }
        w.settled[d] = Some(token);
        w.successes[d] += 1;
        w.history.stale_commit |= stale;
        w.history.settled_early |= !w.has_ended(date);
        Outcome::Recorded { date }
    }

    /// A fault: the database refuses the date's transaction. The date rolls back, is recorded
    /// FAILED, and the run ends (CONTRACT §2.6).
    pub(crate) fn refuse(&self, w: &mut World, r: usize) -> Option<Outcome> {
        let (lease, date) = self.fault_in_date(w, r)?;
        w.replicas[r].job = Job::Releasing { token: lease.token };
        Some(Outcome::Refused { date })
    }

    /// The lease and date of replica `r` inside a date's transaction, when a fault may still
    /// strike it there; spends that fault of the budget.
    pub(crate) fn fault_in_date(&self, w: &mut World, r: usize) -> Option<(Held, u8)> {
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
        Some((lease, date))
    }

    /// A fault: the lock store loses a live lease; the lock is free from now on.
    pub(crate) fn forget(&self, w: &mut World) -> Option<Outcome> {
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
    pub(crate) fn release(&self, w: &mut World, r: usize) -> Option<Outcome> {
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
    pub(crate) fn process(&self, w: &mut World, action: Action, r: usize) -> Option<Outcome> {
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

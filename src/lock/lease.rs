//! Keeping a lease alive while the job runs, and telling the job when it was lost.
//!
//! A lease lasts `at_most_for` so that a crashed holder frees the task in bounded time; a live
//! holder whose work takes longer must push `locked_until` forward, or another replica would take
//! over mid-run. [`LeaseKeeper`] renews every `at_most_for / 3` in a background task, so two
//! renewals can fail or be late before the lease runs out.
//!
//! When the lease is lost it cancels [`LeaseKeeper::lost`], which the job checks between batches
//! and dates, and stops. Lost means: a renewal found the lease taken over or expired, or renewals
//! kept failing (or hanging) until the lease ran out by this process's own monotonic clock. That
//! clock is only used to give up early, never to decide who holds the lock: each deadline is
//! counted from just before the acquisition or renewal was sent, which is no later than the
//! store's clock reading that set `locked_until`. Stopping work is a courtesy to the new holder; the fence
//! ([`super::fence`]) is what guarantees that a holder who missed the signal writes nothing.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::{JobLock, Lease};
use crate::telemetry::metrics;

/// After a failed renewal, retry this soon (or at the next renewal, when that comes first).
const RETRY_AFTER_ERROR: Duration = Duration::from_secs(1);
/// Renewing more often than this would only load the database.
const MIN_RENEW_INTERVAL: Duration = Duration::from_millis(10);

/// Renews a lease in the background until stopped or lost. Dropping it stops renewal.
#[derive(Debug)]
pub struct LeaseKeeper {
    lost: CancellationToken,
    renewals: Arc<AtomicU64>,
    /// Cancels the renewal task when the keeper is stopped or dropped.
    stop: DropGuard,
    /// Answers the latest lease when it ends.
    task: JoinHandle<Lease>,
    /// What [`LeaseKeeper::stop`] answers if the task died without answering.
    granted: Lease,
}

impl LeaseKeeper {
    /// Starts renewing `lease` every `at_most_for / 3`, each renewal pushing `locked_until` to the
    /// database's now() + `at_most_for`.
    ///
    /// Until the first renewal, the lease is assumed to end `locked_until - locked_at` after
    /// [`Lease::asked_at`], just before the acquisition was sent: however long the caller took
    /// to start the keeper (planning, say), that is never later than the store's end.
    pub fn start(lock: JobLock, lease: Lease, at_most_for: Duration) -> Self {
        let lost = CancellationToken::new();
        let renewals = Arc::new(AtomicU64::new(0));
        let stop = CancellationToken::new();
        let renewer = Renewer {
            lock,
            at_most_for,
            deadline: lease.asked_at + granted_for(&lease),
            lease: lease.clone(),
            lost: lost.clone(),
            renewals: Arc::clone(&renewals),
        };
        let task = tokio::spawn(renewer.run(stop.clone()));
        LeaseKeeper {
            lost,
            renewals,
            stop: stop.drop_guard(),
            task,
            granted: lease,
        }
    }

    /// Cancelled once the lease is lost; the job checks it between batches and dates.
    pub fn lost(&self) -> CancellationToken {
        self.lost.clone()
    }

    /// How many renewals succeeded so far.
    pub fn renewals(&self) -> u64 {
        self.renewals.load(Ordering::Relaxed)
    }

    /// Ends renewal and answers the lease with its latest `locked_until`, ready for release.
    /// Whether it was kept to the end: `!lost().is_cancelled()`.
    pub async fn stop(self) -> Lease {
        let LeaseKeeper {
            stop, task, granted, ..
        } = self;
        drop(stop);
        match task.await {
            Ok(lease) => lease,
            Err(e) => {
                tracing::error!(error = %e, "lease renewal task failed");
                granted
            }
        }
    }
}

struct Renewer {
    lock: JobLock,
    at_most_for: Duration,
    lease: Lease,
    /// When the lease runs out at the latest, by this process's monotonic clock.
    deadline: Instant,
    lost: CancellationToken,
    renewals: Arc<AtomicU64>,
}

impl Renewer {
    async fn run(mut self, stop: CancellationToken) -> Lease {
        let every = renew_interval(self.at_most_for);
        let mut next = Instant::now() + every;
        loop {
            tokio::select! {
                () = stop.cancelled() => return self.stopped(),
                () = tokio::time::sleep_until(next) => {}
            }
            let sent = Instant::now();
            if sent >= self.deadline {
                return self.give_up("the lease ran out before it could be renewed");
            }
            let renewal = tokio::time::timeout(self.deadline - sent, self.lock.renew(&self.lease, self.at_most_for));
            let outcome = tokio::select! {
                () = stop.cancelled() => return self.stopped(),
                outcome = renewal => outcome,
            };
            match outcome {
                Ok(Ok(Some(renewed))) => {
                    metrics::lease_renewal(&self.lease.task_name, true);
                    self.lease = renewed;
                    self.deadline = sent + self.at_most_for;
                    self.renewals.fetch_add(1, Ordering::Relaxed);
                    next = sent + every;
                }
                Ok(Ok(None)) => return self.give_up("the lease was taken over or had expired"),
                Ok(Err(e)) => {
                    metrics::lease_renewal(&self.lease.task_name, false);
                    tracing::warn!(
                        task.name = %self.lease.task_name,
                        fencing_token = self.lease.fencing_token.0,
                        error = %e,
                        "lease renewal failed; retrying until the lease runs out"
                    );
                    next = (Instant::now() + RETRY_AFTER_ERROR.min(every)).min(self.deadline);
                }
                Err(_) => return self.give_up("no renewal answered before the lease ran out"),
            }
        }
    }

    /// Stopped by the job: the lease as it stands, lost if it ran out by this process's clock
    /// meanwhile. A holder woken from a pause may end its walk (its date's transaction was ended)
    /// before this task's timer has fired: the job still learns that its lease was gone.
    fn stopped(self) -> Lease {
        if Instant::now() >= self.deadline {
            return self.give_up("the lease ran out before it could be renewed");
        }
        self.lease
    }

    fn give_up(self, reason: &str) -> Lease {
        metrics::lease_renewal(&self.lease.task_name, false);
        tracing::warn!(
            task.name = %self.lease.task_name,
            fencing_token = self.lease.fencing_token.0,
            reason,
            "lease lost; the job stops"
        );
        self.lost.cancel();
        self.lease
    }
}

/// A third of the lease, so two renewals can fail or be late before it runs out.
fn renew_interval(at_most_for: Duration) -> Duration {
    (at_most_for / 3).max(MIN_RENEW_INTERVAL)
}

/// How long the database granted `lease` for, by its own clock.
fn granted_for(lease: &Lease) -> Duration {
    (lease.locked_until - lease.locked_at).to_std().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use chrono::{TimeZone, Utc};
    use uuid::Uuid;

    use super::*;
    use crate::domain::{FencingToken, OwnerToken, TaskName};

    fn lease(granted_secs: i64) -> Lease {
        let locked_at = Utc.with_ymd_and_hms(2026, 12, 2, 18, 0, 0).unwrap();
        Lease {
            task_name: TaskName::from_static("settle-fines"),
            locked_by: "replica-a".into(),
            owner_token: OwnerToken(Uuid::nil()),
            fencing_token: FencingToken(3),
            locked_at,
            locked_until: locked_at + chrono::Duration::seconds(granted_secs),
            asked_at: Instant::now(),
        }
    }

    #[test]
    fn renews_three_times_per_lease() {
        assert_eq!(
            renew_interval(Duration::from_secs(15 * 60)),
            Duration::from_secs(5 * 60)
        );
        assert_eq!(renew_interval(Duration::from_secs(3)), Duration::from_secs(1));
        assert_eq!(renew_interval(Duration::ZERO), MIN_RENEW_INTERVAL);
    }

    #[test]
    fn the_granted_time_is_read_from_the_database_times() {
        assert_eq!(granted_for(&lease(900)), Duration::from_secs(900));
        // a row edited into the past counts as nothing left, not as a panic
        assert_eq!(granted_for(&lease(-5)), Duration::ZERO);
    }
}

//! The fire loop: calls back at every slot of a [`CronSchedule`].
//!
//! tokio-cron-scheduler 0.15 computes a cron job's repeats with the UTC offset captured when
//! the job was created, so a zone with daylight saving drifts by an hour after a change. We
//! therefore never give it a cron expression: we compute each slot with [`CronSchedule`] and
//! hand it a one-shot job for that instant ([`Job::new_one_shot_at_instant_async`]), re-arming
//! after every fire. Three details of that API shape the loop:
//!
//! * It converts the `Instant` into a wall-clock time rounded *down* to whole seconds and polls
//!   every 500 ms, so a job can start up to a second early. The driver waits for the slot's
//!   wall-clock time before firing, so no fire happens before its slot.
//! * Because it compares against the wall clock, a process that was suspended fires on its
//!   first poll after resuming — then we fire only the latest slot that has passed and log how
//!   many were skipped (the settlement job catches up all missing dates itself).
//! * Its poll loop can start the same one-shot twice if its bookkeeping task lags; every
//!   wake-up carries its slot and anything but the armed slot is ignored.
//!
//! If the scheduler refuses a job, that one slot is armed with a plain tokio timer instead
//! (monotonic, so it would fire late after a suspend, which the late-wake rule absorbs).

use std::future::Future;
use std::time::{Duration as StdDuration, Instant};

use chrono::{DateTime, Utc};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_cron_scheduler::{Job, JobScheduler};
use tokio_util::sync::{CancellationToken, DropGuard};
use tokio_util::task::TaskTracker;
use uuid::Uuid;

use super::cron::{CronSchedule, ScheduleError};

/// How many skipped slots we count at most when logging a late wake-up.
const SKIP_COUNT_CAP: usize = 100_000;
/// Bound on waiting for tokio-cron-scheduler to drop the pending job at shutdown.
const REMOVE_TIMEOUT: StdDuration = StdDuration::from_secs(2);

/// A running fire loop. Dropping it stops new fires; [`Ticker::shutdown`] also waits for the
/// calls in flight.
pub struct Ticker {
    /// Cancels the loop's own token (a child of the caller's) when dropped.
    guard: DropGuard,
    driver: JoinHandle<()>,
}

impl std::fmt::Debug for Ticker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ticker")
            .field("finished", &self.driver.is_finished())
            .finish_non_exhaustive()
    }
}

impl Ticker {
    /// Calls `on_fire(slot)` for every slot of `schedule` after now, until `stop` is cancelled.
    ///
    /// `slot` is the scheduled instant, not the wall clock at wake-up, so a late wake still
    /// settles the right date. A fire whose previous call is still running is NOT queued:
    /// each call is spawned on its own task, so `on_fire` is still called and the caller
    /// decides to skip and record it.
    pub async fn start<F, Fut>(
        schedule: CronSchedule,
        stop: CancellationToken,
        on_fire: F,
    ) -> Result<Self, ScheduleError>
    where
        F: Fn(DateTime<Utc>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let first = schedule
            .next_after(Utc::now())
            .ok_or_else(|| ScheduleError::NoUpcomingSlot {
                expr: schedule.expr().to_owned(),
            })?;
        let scheduler = JobScheduler::new()
            .await
            .map_err(|e| ScheduleError::Scheduler(e.to_string()))?;
        scheduler
            .start()
            .await
            .map_err(|e| ScheduleError::Scheduler(e.to_string()))?;

        let token = stop.child_token();
        let (tx, rx) = mpsc::unbounded_channel();
        let pending = arm(&scheduler, first, &tx).await;
        tracing::info!(
            schedule = %schedule,
            next_fire = %first,
            "cron ticker started"
        );
        let driver = Driver {
            schedule,
            scheduler,
            tx,
            rx,
            stop: token.clone(),
            armed: Some(first),
            pending,
            tasks: TaskTracker::new(),
        };
        let driver = tokio::spawn(driver.run(on_fire));
        Ok(Self {
            guard: token.drop_guard(),
            driver,
        })
    }

    /// Stops firing (no new fires) and shuts the underlying scheduler down.
    ///
    /// Then waits for `on_fire` calls already in flight. They are not cancelled here: a call
    /// should watch the caller's `stop` token to wind down, or this waits until it finishes.
    /// Waiting lets a process exit only after its current run has finished or been abandoned
    /// cleanly (lock released), instead of being dropped mid-write with the runtime.
    pub async fn shutdown(self) {
        let Self { guard, driver } = self;
        drop(guard);
        if let Err(e) = driver.await {
            tracing::error!(error = %e, "cron ticker task failed");
        }
    }
}

struct Driver {
    schedule: CronSchedule,
    scheduler: JobScheduler,
    tx: mpsc::UnboundedSender<DateTime<Utc>>,
    rx: mpsc::UnboundedReceiver<DateTime<Utc>>,
    stop: CancellationToken,
    /// The slot we are waiting for; wake-ups for anything else are stale duplicates.
    armed: Option<DateTime<Utc>>,
    /// The tokio-cron-scheduler job for `armed`, if it accepted one.
    pending: Option<Uuid>,
    tasks: TaskTracker,
}

impl Driver {
    async fn run<F, Fut>(mut self, on_fire: F)
    where
        F: Fn(DateTime<Utc>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        loop {
            let slot = tokio::select! {
                biased;
                () = self.stop.cancelled() => break,
                woke = self.rx.recv() => match woke {
                    Some(slot) => slot,
                    None => break,
                },
            };
            if self.armed != Some(slot) {
                tracing::debug!(%slot, "ignoring duplicate cron wake-up");
                continue;
            }
            // tokio-cron-scheduler rounds down to whole seconds: never fire before the slot.
            if let Ok(early) = (slot - Utc::now()).to_std() {
                tokio::select! {
                    biased;
                    () = self.stop.cancelled() => break,
                    () = tokio::time::sleep(early) => {}
                }
            }
            let (fire, skipped) = resolve_fire(&self.schedule, slot, Utc::now());
            if skipped > 0 {
                tracing::warn!(
                    schedule = %self.schedule,
                    %fire,
                    first_skipped = %slot,
                    skipped,
                    "woke up late; firing only the latest slot"
                );
            }
            self.armed = None;
            self.pending = None;
            tracing::debug!(%fire, "cron fire");
            self.tasks.spawn(on_fire(fire));

            match self.schedule.next_after(fire) {
                Some(next) => {
                    self.pending = arm(&self.scheduler, next, &self.tx).await;
                    self.armed = Some(next);
                }
                None => {
                    tracing::warn!(schedule = %self.schedule, "schedule has no further slots");
                }
            }
        }

        if let Some(id) = self.pending.take()
            && tokio::time::timeout(REMOVE_TIMEOUT, self.scheduler.remove(&id))
                .await
                .is_err()
        {
            tracing::warn!("timed out removing the pending cron job");
        }
        if let Err(e) = self.scheduler.shutdown().await {
            tracing::warn!(error = %e, "cron scheduler shutdown failed");
        }
        self.tasks.close();
        self.tasks.wait().await;
        tracing::info!(schedule = %self.schedule, "cron ticker stopped");
    }
}

/// Which slot to fire when the wake-up for `armed` happens at `now`: the latest slot that has
/// passed, and how many earlier slots (starting with `armed`) that skips.
fn resolve_fire(schedule: &CronSchedule, armed: DateTime<Utc>, now: DateTime<Utc>) -> (DateTime<Utc>, usize) {
    match schedule.latest_at_or_before(now) {
        Some(latest) if latest > armed => {
            // Slots in [armed, latest) = slots in (armed, latest].
            let skipped = schedule.slots_between(armed, latest, SKIP_COUNT_CAP).len();
            (latest, skipped)
        }
        _ => (armed, 0),
    }
}

/// Asks tokio-cron-scheduler for a one-shot wake-up at `slot`; falls back to a tokio timer.
async fn arm(scheduler: &JobScheduler, slot: DateTime<Utc>, tx: &mpsc::UnboundedSender<DateTime<Utc>>) -> Option<Uuid> {
    let delay = (slot - Utc::now()).to_std().unwrap_or_default();
    let sender = tx.clone();
    let job = Job::new_one_shot_at_instant_async(Instant::now() + delay, move |_id, _sched| {
        let sender = sender.clone();
        Box::pin(async move {
            // The driver may be gone after shutdown; nothing to do then.
            let _ = sender.send(slot);
        })
    });
    let added = match job {
        Ok(job) => scheduler.add(job).await,
        Err(e) => Err(e),
    };
    match added {
        Ok(id) => Some(id),
        Err(e) => {
            tracing::warn!(error = %e, %slot, "cron scheduler refused a job; using a tokio timer");
            let sender = tx.clone();
            tokio::spawn(async move {
                tokio::time::sleep(delay).await;
                let _ = sender.send(slot);
            });
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    use chrono::TimeDelta;
    use chrono_tz::Asia::Shanghai;

    fn utc(s: &str) -> DateTime<Utc> {
        s.parse().expect("valid RFC 3339 instant")
    }

    fn every_second() -> CronSchedule {
        CronSchedule::parse("*/1 * * * * *", Shanghai).unwrap()
    }

    type Fires = Arc<Mutex<Vec<(DateTime<Utc>, DateTime<Utc>)>>>;

    /// Starts a ticker that records `(slot, wall clock at the call)`.
    async fn recording_ticker(stop: CancellationToken) -> (Ticker, Fires) {
        let fires: Fires = Arc::default();
        let sink = fires.clone();
        let ticker = Ticker::start(every_second(), stop, move |slot| {
            sink.lock().unwrap().push((slot, Utc::now()));
            async {}
        })
        .await
        .unwrap();
        (ticker, fires)
    }

    #[test]
    fn on_time_fires_the_armed_slot() {
        let s = every_second();
        let armed = utc("2026-05-01T00:00:10Z");
        assert_eq!(resolve_fire(&s, armed, armed), (armed, 0));
        assert_eq!(
            resolve_fire(&s, armed, armed + TimeDelta::milliseconds(999)),
            (armed, 0)
        );
        // Woken early (should not happen after the wait): still the armed slot.
        assert_eq!(resolve_fire(&s, armed, armed - TimeDelta::seconds(5)), (armed, 0));
    }

    #[test]
    fn late_wake_fires_only_the_latest_slot() {
        let s = every_second();
        let armed = utc("2026-05-01T00:00:10Z");
        // Suspended for 30.5 s: slots :10 … :39 skipped, :40 fired.
        let (fire, skipped) = resolve_fire(&s, armed, utc("2026-05-01T00:00:40.5Z"));
        assert_eq!(fire, utc("2026-05-01T00:00:40Z"));
        assert_eq!(skipped, 30);

        let daily = CronSchedule::parse("0 0 2 * * *", Shanghai).unwrap();
        let armed = utc("2026-05-01T18:00:00Z");
        // Three nights asleep: the fire settles from the latest slot; two are skipped.
        let (fire, skipped) = resolve_fire(&daily, armed, utc("2026-05-03T19:00:00Z"));
        assert_eq!(fire, utc("2026-05-03T18:00:00Z"));
        assert_eq!(skipped, 2);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn fires_about_once_a_second_and_stops_when_cancelled() {
        let stop = CancellationToken::new();
        let started = Utc::now();
        let (ticker, fires) = recording_ticker(stop.clone()).await;
        tokio::time::sleep(StdDuration::from_millis(4_300)).await;
        stop.cancel();
        let seen = fires.lock().unwrap().clone();
        assert!(
            (3..=5).contains(&seen.len()),
            "expected about 4 fires in 4.3 s, got {seen:?}"
        );
        for (slot, called_at) in &seen {
            assert!(*slot > started, "slot {slot} is not after start {started}");
            assert_eq!(slot.timestamp_subsec_nanos(), 0);
            assert!(called_at >= slot, "fired early: {called_at} < {slot}");
            assert!(
                *called_at - *slot < TimeDelta::milliseconds(1_500),
                "fired late: {called_at} vs {slot}"
            );
        }
        for w in seen.windows(2) {
            assert!(w[1].0 > w[0].0, "slots not increasing: {seen:?}");
            assert!(w[1].0 - w[0].0 <= TimeDelta::seconds(2), "gap in slots: {seen:?}");
        }
        // Nothing fires after cancellation.
        tokio::time::sleep(StdDuration::from_millis(2_200)).await;
        assert_eq!(fires.lock().unwrap().len(), seen.len());
        ticker.shutdown().await;
        assert_eq!(fires.lock().unwrap().len(), seen.len());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn shutdown_stops_firing_without_cancelling_the_callers_token() {
        let stop = CancellationToken::new();
        let (ticker, fires) = recording_ticker(stop.clone()).await;
        tokio::time::sleep(StdDuration::from_millis(1_600)).await;
        ticker.shutdown().await;
        let count = fires.lock().unwrap().len();
        assert!(count >= 1, "no fire before shutdown");
        assert!(!stop.is_cancelled());
        tokio::time::sleep(StdDuration::from_millis(2_200)).await;
        assert_eq!(fires.lock().unwrap().len(), count);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn slow_calls_do_not_delay_the_next_fire() {
        let stop = CancellationToken::new();
        let calls = Arc::new(AtomicUsize::new(0));
        let running = Arc::new(AtomicUsize::new(0));
        let max_running = Arc::new(AtomicUsize::new(0));
        let (c, r, m, s) = (calls.clone(), running.clone(), max_running.clone(), stop.clone());
        let ticker = Ticker::start(every_second(), stop.clone(), move |_slot| {
            c.fetch_add(1, Ordering::SeqCst);
            let now_running = r.fetch_add(1, Ordering::SeqCst) + 1;
            m.fetch_max(now_running, Ordering::SeqCst);
            let (r, s) = (r.clone(), s.clone());
            async move {
                // A "settlement" that takes far longer than the interval.
                tokio::select! {
                    () = s.cancelled() => {}
                    () = tokio::time::sleep(StdDuration::from_secs(30)) => {}
                }
                r.fetch_sub(1, Ordering::SeqCst);
            }
        })
        .await
        .unwrap();
        tokio::time::sleep(StdDuration::from_millis(3_300)).await;
        assert!(calls.load(Ordering::SeqCst) >= 2);
        assert!(max_running.load(Ordering::SeqCst) >= 2);
        stop.cancel();
        // Shutdown waits for the in-flight calls, which end on cancellation.
        tokio::time::timeout(StdDuration::from_secs(5), ticker.shutdown())
            .await
            .expect("shutdown waits only for calls that are winding down");
        assert_eq!(running.load(Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn a_schedule_without_future_slots_is_an_error() {
        let past = CronSchedule::parse("0 0 0 1 1 * 2020", Shanghai).unwrap();
        let err = Ticker::start(past, CancellationToken::new(), |_| async {})
            .await
            .unwrap_err();
        assert!(matches!(err, ScheduleError::NoUpcomingSlot { .. }), "{err:?}");
    }
}

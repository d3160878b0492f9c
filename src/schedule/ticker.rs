//! The fire loop: calls back at every slot of a [`CronSchedule`], by the database's clock.
//!
//! Slots are computed and awaited on a [`TimeSource`]: in `serve`, [`DatabaseTime`], the
//! database's clock as this replica estimates it (its own clock minus the measured skew). So a
//! replica whose clock is hours off fires at the same instants as the others, and the target
//! date follows the slot on the database's clock (CONTRACT §2.1).
//!
//! The wait is a loop of short sleeps (at most [`POLL`]) that reads the time source each round,
//! rather than one long timer:
//!
//! * tokio's timers follow a monotonic clock that stops while the machine is suspended; a long
//!   timer would fire late by the length of a suspend.
//! * A step of the wall clock (an NTP step, a VM resumed after a day) shows as the wall clock and
//!   the monotonic clock disagreeing over one round; the skew is then measured again at once, so
//!   the estimate follows the database, not the step.
//! * When the estimate says the slot has come, the skew is measured again before firing: a step
//!   since the last measurement cannot make the replica fire early. While the database does not
//!   answer, the last measured skew stands (and nothing could be settled anyway).
//!
//! A wake-up after a suspend fires only the latest slot that has passed
//! ([`CronSchedule::catch_up`]; the settlement job catches up all missing dates itself).
//!
//! [`DatabaseTime`]: crate::clock::DatabaseTime

use std::future::Future;
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::{CancellationToken, DropGuard};
use tokio_util::task::TaskTracker;

use super::cron::{CronSchedule, ScheduleError};
use crate::clock::{Clock, DatabaseTime};

/// The longest sleep of the wait: how late a suspend or a clock step is noticed at worst.
pub const POLL: Duration = Duration::from_millis(500);
/// Wall-clock and monotonic time disagreeing by more than this over one round is a step.
const STEP: TimeDelta = TimeDelta::milliseconds(250);

/// The clock the ticker waits on: cheap to read, and measured again before a fire.
pub trait TimeSource: Clone + Send + Sync + 'static {
    /// The deciding clock's time now, as estimated.
    fn now(&self) -> DateTime<Utc>;
    /// This replica's own wall clock, whose steps the wait watches for.
    fn wall_clock(&self) -> &Clock;
    /// Measures the estimate again; on failure the last measurement stands.
    fn measure(&self) -> impl Future<Output = ()> + Send;
}

impl TimeSource for DatabaseTime {
    fn now(&self) -> DateTime<Utc> {
        DatabaseTime::now(self)
    }

    fn wall_clock(&self) -> &Clock {
        self.clock()
    }

    async fn measure(&self) {
        if let Err(error) = DatabaseTime::measure(self).await {
            tracing::warn!(%error, "database clock not measured; the last measured skew stands");
        }
    }
}

/// A replica's own clock as the deciding clock: for schedules that need no database (tests of
/// the fire loop itself).
impl TimeSource for Clock {
    fn now(&self) -> DateTime<Utc> {
        Clock::now(self)
    }

    fn wall_clock(&self) -> &Clock {
        self
    }

    async fn measure(&self) {}
}

/// A running fire loop. Dropping it stops new fires; [`Ticker::shutdown`] also waits for the
/// calls in flight.
pub struct Ticker {
    /// Cancels the loop's own token (a child of the caller's) when dropped.
    guard: DropGuard,
    driver: JoinHandle<()>,
}

impl Ticker {
    /// Calls `on_fire(slot)` for every slot of `schedule` after now by `time`, until `stop` is
    /// cancelled.
    ///
    /// `slot` is the scheduled instant, not the time at wake-up, so a late wake still settles
    /// the right date. A fire whose previous call is still running is NOT queued: each call is
    /// spawned on its own task, so `on_fire` is still called and the caller decides to skip and
    /// record it.
    pub async fn start<T, F, Fut>(
        schedule: CronSchedule,
        time: T,
        stop: CancellationToken,
        on_fire: F,
    ) -> Result<Self, ScheduleError>
    where
        T: TimeSource,
        F: Fn(DateTime<Utc>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        time.measure().await;
        let first = schedule
            .next_after(time.now())
            .ok_or_else(|| ScheduleError::NoUpcomingSlot {
                expr: schedule.expr().to_owned(),
            })?;
        tracing::info!(schedule = %schedule, next_fire = %first, "cron ticker started");
        let token = stop.child_token();
        let driver = tokio::spawn(run(schedule, time, token.clone(), first, on_fire));
        Ok(Self {
            guard: token.drop_guard(),
            driver,
        })
    }

    /// Stops firing (no new fires).
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

async fn run<T, F, Fut>(schedule: CronSchedule, time: T, stop: CancellationToken, mut slot: DateTime<Utc>, on_fire: F)
where
    T: TimeSource,
    F: Fn(DateTime<Utc>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let tasks = TaskTracker::new();
    loop {
        tokio::select! {
            biased;
            () = stop.cancelled() => break,
            () = wait_for(&time, slot) => {}
        }
        let (fire, skipped) = schedule.catch_up(slot, time.now());
        if skipped > 0 {
            let first_skipped = slot;
            tracing::warn!(%schedule, %fire, %first_skipped, skipped, "woke up late; firing only the latest slot");
        }
        tracing::debug!(%fire, "cron fire");
        tasks.spawn(on_fire(fire));
        let Some(next) = schedule.next_after(fire) else {
            tracing::warn!(%schedule, "schedule has no further slots");
            stop.cancelled().await;
            break;
        };
        slot = next;
    }
    tasks.close();
    tasks.wait().await;
    tracing::info!(%schedule, "cron ticker stopped");
}

/// Returns once `time` has reached `slot`, measured again at that moment (see the module docs).
async fn wait_for<T: TimeSource>(time: &T, slot: DateTime<Utc>) {
    loop {
        if time.now() >= slot {
            time.measure().await;
            if time.now() >= slot {
                return;
            }
        }
        let left = (slot - time.now()).to_std().unwrap_or_default();
        let (wall, monotonic) = (time.wall_clock().now(), Instant::now());
        tokio::time::sleep(left.min(POLL)).await;
        let wall_elapsed = time.wall_clock().now() - wall;
        let monotonic_elapsed = TimeDelta::from_std(monotonic.elapsed()).unwrap_or(TimeDelta::MAX);
        if (wall_elapsed - monotonic_elapsed).abs() > STEP {
            tracing::warn!(
                clock.step_ms = (wall_elapsed - monotonic_elapsed).num_milliseconds(),
                "this replica's clock stepped (or the host was suspended); measuring the database clock again"
            );
            time.measure().await;
        }
    }
}

//! The fire loop: calls back at every slot of a [`CronSchedule`].
//!
//! tokio-cron-scheduler 0.15 computes a cron job's repeats with the UTC offset captured when
//! the job was created, so a zone with daylight saving drifts by an hour after a change. We
//! therefore never give it a cron expression: each slot, computed by [`CronSchedule`], becomes a
//! one-shot job ([`Job::new_one_shot_at_instant_async`]) that wakes the loop once. What the
//! scheduler brings is its poll of the wall clock every 500 ms: tokio's timers follow a
//! monotonic clock that stops while the machine is suspended, so alone they would fire late by
//! the length of a suspend.
//!
//! * It rounds the instant down to a wall-clock second, so it can wake us up to a second early
//!   (test `one_shot_instants_are_rounded_down` in `tests/schedule`): a tokio timer waits the
//!   rest, so no fire happens before its slot. If it refuses the job, that timer does the whole
//!   wait.
//! * Each wake-up is a oneshot channel for its own slot: if its poll loop runs a job twice
//!   (its bookkeeping lagging the next poll), the second run has nobody to wake.
//! * A wake-up after a suspend fires only the latest slot that has passed
//!   ([`CronSchedule::catch_up`]; the settlement job catches up all missing dates itself).

use std::future::Future;
use std::time::Instant;

use chrono::{DateTime, Utc};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_cron_scheduler::{Job, JobScheduler};
use tokio_util::sync::{CancellationToken, DropGuard};
use tokio_util::task::TaskTracker;

use super::cron::{CronSchedule, ScheduleError};

/// A running fire loop. Dropping it stops new fires; [`Ticker::shutdown`] also waits for the
/// calls in flight.
pub struct Ticker {
    /// Cancels the loop's own token (a child of the caller's) when dropped.
    guard: DropGuard,
    driver: JoinHandle<()>,
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
        let scheduler = JobScheduler::new().await?;
        scheduler.start().await?;
        tracing::info!(schedule = %schedule, next_fire = %first, "cron ticker started");
        let token = stop.child_token();
        let driver = tokio::spawn(run(schedule, scheduler, token.clone(), first, on_fire));
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

async fn run<F, Fut>(
    schedule: CronSchedule,
    mut scheduler: JobScheduler,
    stop: CancellationToken,
    mut slot: DateTime<Utc>,
    on_fire: F,
) where
    F: Fn(DateTime<Utc>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let tasks = TaskTracker::new();
    loop {
        tokio::select! {
            biased;
            () = stop.cancelled() => break,
            () = wait_for(&scheduler, slot) => {}
        }
        let (fire, skipped) = schedule.catch_up(slot, Utc::now());
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
    if let Err(e) = scheduler.shutdown().await {
        tracing::warn!(error = %e, "cron scheduler shutdown failed");
    }
    tasks.close();
    tasks.wait().await;
    tracing::info!(%schedule, "cron ticker stopped");
}

/// Returns once the wall clock has reached `slot` (see the module docs).
async fn wait_for(scheduler: &JobScheduler, slot: DateTime<Utc>) {
    let delay = (slot - Utc::now()).to_std().unwrap_or_default();
    let (woken, wake_up) = oneshot::channel();
    let mut woken = Some(woken);
    let job = Job::new_one_shot_at_instant_async(Instant::now() + delay, move |_id, _scheduler| {
        // Gone after a first run: a second one wakes nobody.
        let woken = woken.take();
        Box::pin(async move { _ = woken.map(|w| w.send(())) })
    });
    let added = match job {
        Ok(job) => scheduler.add(job).await,
        Err(e) => Err(e),
    };
    match added {
        // An error only if the scheduler dropped the job unrun: the timer then waits instead.
        Ok(_) => _ = wake_up.await,
        Err(e) => tracing::warn!(error = %e, %slot, "cron scheduler refused a job; using a tokio timer"),
    }
    if let Ok(rest) = (slot - Utc::now()).to_std() {
        tokio::time::sleep(rest).await;
    }
}

//! Wires the cron ticker and the catch-up at start to the job, and fires again when a scheduled
//! fire met a held lock: a lock held at the fire instant (an operator's run, a long backfill)
//! must not cost the night.

use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::{Refused, Request, RunReport, SettleJob};
use crate::backoff::Backoff;
use crate::schedule::{ScheduleError, Ticker, settle_target};
use crate::settlement::Trigger;
use crate::store;

/// Added to the end of the lease a held fire met before it tries again: the holder's release
/// (or its lease running out) is then past by the database clock, not just about to be.
pub const HELD_RETRY_MARGIN: Duration = Duration::from_millis(500);
/// The waits after the lock store (or the database) was unavailable: from 1 s doubling to 60 s.
const UNAVAILABLE_RETRY: Backoff = Backoff::new(Duration::from_secs(1), Duration::from_secs(60));

/// The running schedule of this replica.
pub struct Scheduler {
    ticker: Ticker,
    catch_up: JoinHandle<()>,
}

impl Scheduler {
    /// Catches up at start (in the background) and fires the job on every cron slot.
    pub async fn start(job: SettleJob, stop: CancellationToken) -> Result<Self, ScheduleError> {
        let catch_up = tokio::spawn(catch_up_at_start(job.clone()));
        let tz = job.schedule().tz();
        let fire_job = job.clone();
        let time = job.database_time().clone();
        let ticker = Ticker::start(job.schedule().clone(), time, stop, move |slot| {
            let job = fire_job.clone();
            async move {
                // The slot, not the wall clock at wake-up, decides the target date, so a late
                // wake-up still settles the right day.
                let target = settle_target(slot, tz);
                let next_slot = job.schedule().next_after(slot);
                let fired = fire_until_run(&job, Trigger::Cron, slot, Request::CatchUp { target }, next_slot).await;
                log_refusal(fired.err());
            }
        })
        .await?;
        Ok(Scheduler { ticker, catch_up })
    }

    /// No new fires; waits for the fires in flight (and the catch-up at start). Call it together
    /// with [`SettleJob::shutdown`], which bounds those by the grace period: on its own it waits
    /// for a running walk to end.
    pub async fn stop(self) {
        self.ticker.shutdown().await;
        if let Err(error) = self.catch_up.await {
            tracing::error!(%error, "catch-up at start task failed");
        }
    }
}

/// Fires `request` for `slot` with `trigger`, and fires it again while the refusal is one that
/// passes:
/// - **held** by another holder: when the lease it met ends (its `locked_until` by the database
///   clock, plus [`HELD_RETRY_MARGIN`]);
/// - **unavailable** (lock store or database): after a backoff from 1 s doubling to 60 s.
///
/// A **busy** fire (this process still runs an earlier one) is dropped, as contract §2.2 says:
/// the other replicas' fires of the slot met this process's lock and try again when its lease
/// ends, and the next slot's fire here catches up whatever is left. Retrying it the moment the
/// running fire ends would win the lock again before them, so a replica whose fires outlast the
/// cron's period would keep the job to itself.
///
/// Every try goes through [`SettleJob::fire`], so the attempt timeline shows each one (HELD,
/// then WON or NOTHING_TO_DO). Gives up at `until` (the next slot, whose own fire takes over;
/// compared with the database's clock as this replica estimates it, as the ticker's slots are)
/// and at shutdown, answering the last refusal.
pub async fn fire_until_run(
    job: &SettleJob,
    trigger: Trigger,
    slot: DateTime<Utc>,
    request: Request,
    until: Option<DateTime<Utc>>,
) -> Result<RunReport, Refused> {
    let mut unavailable_waits = UNAVAILABLE_RETRY.waits();
    let mut unavailable_wait = || unavailable_waits.next().unwrap_or(UNAVAILABLE_RETRY.max);
    loop {
        let refused = match job.fire(trigger, slot, request.clone()).await {
            Ok(report) => return Ok(report),
            Err(refused) => refused,
        };
        let wait = match &refused {
            Refused::Held { locked_until, .. } => match store::clock::now(job.pool()).await {
                Ok(now) => (*locked_until - now).to_std().unwrap_or_default() + HELD_RETRY_MARGIN,
                // The lock answered but the clock did not: the database is failing; back off.
                Err(_) => unavailable_wait(),
            },
            Refused::Unavailable(_) => unavailable_wait(),
            Refused::Busy(_)
            | Refused::NothingToDo
            | Refused::BeforeStart(_)
            | Refused::Invalid(_)
            | Refused::ShuttingDown => {
                return Err(refused);
            }
        };
        // Time left before the next slot (none: no next slot, try until shutdown), by the clock
        // the ticker's slots are awaited on.
        let left = match until.map(|until| (until - job.database_time().now()).to_std()) {
            None => None,
            Some(Ok(left)) => Some(left),
            // The next slot is already here: its fire takes over.
            Some(Err(_)) => return Err(refused),
        };
        if left.is_some_and(|left| wait >= left) {
            tracing::info!(
                job.task_name = %job.task_name(),
                job.trigger = trigger.as_str(),
                %slot,
                reason = %refused,
                "fire refused; the next fire takes over"
            );
            return Err(refused);
        }
        tracing::info!(
            job.task_name = %job.task_name(),
            job.trigger = trigger.as_str(),
            %slot,
            reason = %refused,
            retry_in_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
            "fire refused; trying again"
        );
        tokio::select! {
            () = job.shutting_down() => return Err(Refused::ShuttingDown),
            () = sleep_at_most(left.unwrap_or(Duration::MAX)) => return Err(refused),
            () = tokio::time::sleep(wait) => {}
        }
    }
}

/// Sleeps for `limit`; `Duration::MAX` means forever.
async fn sleep_at_most(limit: Duration) {
    match tokio::time::Instant::now().checked_add(limit) {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// A replica that starts after a scheduled time and finds dates missing runs the job once
/// (trigger `startup`), under the same lock: replicas starting together settle them once. A lock
/// held meanwhile is waited for, as for a cron fire, until the next slot.
async fn catch_up_at_start(job: SettleJob) {
    let result: anyhow::Result<()> = async {
        let pool = job.pool();
        let now = store::clock::now(pool).await?;
        let Some(slot) = job.schedule().latest_at_or_before(now) else {
            return Ok(());
        };
        let request = Request::CatchUp {
            target: settle_target(slot, job.schedule().tz()),
        };
        let missing = job.planner().plan(&request).await?;
        if missing.is_empty() {
            return Ok(());
        }
        tracing::info!(
            job.task_name = %job.task_name(),
            job.dates = missing.dates.len(),
            "dates missing at start; catching up"
        );
        let next_slot = job.schedule().next_after(now);
        log_refusal(
            fire_until_run(&job, Trigger::Startup, now, request, next_slot)
                .await
                .err(),
        );
        Ok(())
    }
    .await;
    if let Err(error) = result {
        tracing::warn!(
            error = format!("{error:#}"),
            "catch-up at start failed; the next fire will retry"
        );
    }
}

fn log_refusal(refused: Option<Refused>) {
    // Each refusal is already in the attempt timeline; Busy/Held/Unavailable were logged there.
    if let Some(Refused::ShuttingDown) = refused {
        tracing::info!("fire ignored: shutting down");
    }
}

//! Wires the cron ticker and the catch-up at start to the job.

use tokio_util::sync::CancellationToken;

use super::{Plan, Refused, SettleJob};
use crate::schedule::{ScheduleError, Ticker, settle_target};
use crate::settlement::{self, Trigger};
use crate::store;

/// The running schedule of this replica.
pub struct Scheduler {
    ticker: Ticker,
}

impl Scheduler {
    /// Catches up at start (in the background) and fires the job on every cron slot.
    pub async fn start(job: SettleJob, stop: CancellationToken) -> Result<Self, ScheduleError> {
        tokio::spawn(catch_up_at_start(job.clone()));
        let tz = job.schedule().tz();
        let fire_job = job.clone();
        let ticker = Ticker::start(job.schedule().clone(), stop, move |slot| {
            let job = fire_job.clone();
            async move {
                // The slot, not the wall clock at wake-up, decides the target date, so a late
                // wake-up still settles the right day.
                let target = settle_target(slot, tz);
                log_refusal(job.fire(Trigger::Cron, slot, Plan::CatchUp { target }).await.err());
            }
        })
        .await?;
        Ok(Scheduler { ticker })
    }

    /// No new fires. A running fire is stopped by [`SettleJob::shutdown`].
    pub async fn stop(self) {
        self.ticker.shutdown().await;
    }
}

/// A replica that starts after a scheduled time and finds dates missing runs the job once
/// (trigger `startup`), under the same lock: replicas starting together settle them once.
async fn catch_up_at_start(job: SettleJob) {
    let result: anyhow::Result<()> = async {
        let pool = job.pool();
        let now = store::clock::now(pool).await?;
        let Some(slot) = job.schedule().latest_at_or_before(now) else {
            return Ok(());
        };
        let target = settle_target(slot, job.schedule().tz());
        let missing =
            settlement::dates_for_run(pool, job.task_name(), job.start_date(), target, job.backfill_max_days()).await?;
        if missing.is_empty() && !store::loans::changes_pending(pool).await? {
            return Ok(());
        }
        tracing::info!(
            job.task_name = job.task_name(),
            job.dates = missing.len(),
            "dates missing at start; catching up"
        );
        log_refusal(job.fire(Trigger::Startup, now, Plan::CatchUp { target }).await.err());
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

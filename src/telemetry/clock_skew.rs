//! This replica's clock against the database clock.
//!
//! Leases and "today" come from the database clock, so skew does not break the lock; it does
//! make this replica's cron fire early or late against the others, and its own timestamps (logs,
//! spans) disagree with the records. The probe publishes it as `finesettle.clock.skew` so an
//! operator sees a drifting host before it matters.

use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::clock::DatabaseTime;

/// How often the probe measures.
pub const CLOCK_SKEW_PROBE_INTERVAL: Duration = Duration::from_secs(60);

/// Measures the skew at once and then every minute ([`DatabaseTime::measure`], which also keeps
/// the cron's estimate of the database clock fresh), recording it as the `finesettle.clock.skew`
/// gauge, until `stop` is cancelled. The first measurement is taken even when `stop` is already
/// cancelled, so a replica always reports its skew once.
pub fn spawn_clock_skew_probe(time: DatabaseTime, stop: CancellationToken) -> JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            match time.measure().await {
                Ok(skew) => {
                    let seconds = skew.as_seconds_f64();
                    super::metrics::clock_skew(seconds);
                    tracing::debug!(clock.skew_seconds = seconds, "clock skew measured");
                }
                Err(error) => tracing::warn!(error = %error, "clock skew not measured: database unavailable"),
            }
            tokio::select! {
                () = stop.cancelled() => break,
                () = tokio::time::sleep(CLOCK_SKEW_PROBE_INTERVAL) => {}
            }
        }
    })
}

//! This replica's clock against the database clock.
//!
//! Leases, "today", fire instants and which dates have ended all come from the database clock,
//! so skew breaks nothing the job does; it does make this replica's own timestamps (logs, spans)
//! disagree with the records. The probe keeps the cron's estimate of the database clock fresh,
//! publishes the skew as `finesettle.clock.skew`, and records it for the CLOCK_SKEW alert, so an
//! operator sees a drifting host.

use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::clock::DatabaseTime;
use crate::store::replica_clocks;

/// How often the probe measures.
pub const CLOCK_SKEW_PROBE_INTERVAL: Duration = Duration::from_secs(60);

/// Measures the skew at once and then every minute ([`DatabaseTime::measure`], which also keeps
/// the cron's estimate of the database clock fresh), recording it as the `finesettle.clock.skew`
/// gauge and as `instance_id`'s row of `replica_clock` (which the CLOCK_SKEW alert reads), until
/// `stop` is cancelled. The first measurement is taken even when `stop` is already cancelled, so
/// a replica always reports its skew once.
pub fn spawn_clock_skew_probe(time: DatabaseTime, instance_id: String, stop: CancellationToken) -> JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            match time.measure().await {
                Ok(skew) => {
                    let seconds = skew.as_seconds_f64();
                    super::metrics::clock_skew(seconds);
                    tracing::debug!(clock.skew_seconds = seconds, "clock skew measured");
                    if let Err(error) = replica_clocks::record(time.pool(), &instance_id, seconds).await {
                        tracing::warn!(error = %error, "clock skew not recorded for alerts: database unavailable");
                    }
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

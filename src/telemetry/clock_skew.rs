//! This replica's clock against the database clock.
//!
//! Leases and "today" come from the database clock, so skew does not break the lock; it does
//! make this replica's cron fire early or late against the others, and its own timestamps (logs,
//! spans) disagree with the records. The probe publishes it as `finesettle.clock.skew` so an
//! operator sees a drifting host before it matters.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::PgPool;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::store::{clock, replica_clocks};

/// How often the probe measures.
pub const CLOCK_SKEW_PROBE_INTERVAL: Duration = Duration::from_secs(60);

/// Measures this replica's clock minus the database clock, in seconds.
///
/// The database read `now()` somewhere between sending the query and receiving the answer; the
/// midpoint of the two local readings is the best estimate of the local time at that moment, off
/// by at most half the round trip.
pub async fn measure_clock_skew(pool: &PgPool) -> sqlx::Result<f64> {
    let sent = Utc::now();
    let database = clock::now(pool).await?;
    let received = Utc::now();
    Ok(skew_seconds(sent, database, received))
}

fn skew_seconds(sent: DateTime<Utc>, database: DateTime<Utc>, received: DateTime<Utc>) -> f64 {
    let midpoint = sent + (received - sent) / 2;
    (midpoint - database).as_seconds_f64()
}

/// Measures the skew at once and then every minute, recording it as the `finesettle.clock.skew`
/// gauge and as `instance_id`'s row of `replica_clock` (which the CLOCK_SKEW alert reads), until
/// `stop` is cancelled. The first measurement is taken even when `stop` is already cancelled, so
/// a replica always reports its skew once.
pub fn spawn_clock_skew_probe(pool: PgPool, instance_id: String, stop: CancellationToken) -> JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            match measure_clock_skew(&pool).await {
                Ok(seconds) => {
                    super::metrics::clock_skew(seconds);
                    tracing::debug!(clock.skew_seconds = seconds, "clock skew measured");
                    if let Err(error) = replica_clocks::record(&pool, &instance_id, seconds).await {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn at(rfc3339: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(rfc3339).unwrap().to_utc()
    }

    #[test]
    fn skew_is_the_local_midpoint_minus_the_database_time() {
        let skew = skew_seconds(
            at("2026-12-01T10:00:00Z"),
            at("2026-12-01T09:59:58Z"),
            at("2026-12-01T10:00:02Z"),
        );
        assert_eq!(skew, 3.0, "midpoint 10:00:01 is three seconds ahead of the database");
    }

    #[test]
    fn a_replica_behind_the_database_has_negative_skew() {
        let skew = skew_seconds(
            at("2026-12-01T10:00:00Z"),
            at("2026-12-01T10:00:00.750Z"),
            at("2026-12-01T10:00:00.500Z"),
        );
        assert_eq!(skew, -0.5);
    }
}

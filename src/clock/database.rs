//! The database's clock as this replica estimates it between measurements.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use chrono::{DateTime, TimeDelta, Utc};
use sqlx::PgPool;

use super::Clock;
use crate::store;

/// The database's clock, estimated from this replica's [`Clock`] and the last measured skew
/// (replica minus database). Cheap to clone; clones share the measurement.
///
/// Reading it costs nothing; [`DatabaseTime::measure`] asks the database. Until the first
/// measurement the skew is taken as zero. While the database does not answer, the last measured
/// skew stands.
#[derive(Debug, Clone)]
pub struct DatabaseTime {
    clock: Clock,
    pool: PgPool,
    /// The last measured skew, in microseconds.
    skew_micros: Arc<AtomicI64>,
}

impl DatabaseTime {
    pub fn new(clock: Clock, pool: PgPool) -> Self {
        DatabaseTime {
            clock,
            pool,
            skew_micros: Arc::new(AtomicI64::new(0)),
        }
    }

    /// The database measured.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// This replica's own clock.
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// The database's time now, by the last measurement.
    pub fn now(&self) -> DateTime<Utc> {
        self.clock.now() - self.skew()
    }

    /// The last measured skew: this replica's clock minus the database's.
    pub fn skew(&self) -> TimeDelta {
        TimeDelta::microseconds(self.skew_micros.load(Ordering::Relaxed))
    }

    /// Measures the skew again and keeps it; on error the last measurement stands.
    ///
    /// The database read its clock somewhere between sending the query and receiving the
    /// answer; the midpoint of the two local readings is the best estimate of the local time at
    /// that moment, off by at most half the round trip.
    pub async fn measure(&self) -> sqlx::Result<TimeDelta> {
        let sent = self.clock.now();
        let database = store::clock::now(&self.pool).await?;
        let received = self.clock.now();
        let skew = skew(sent, database, received);
        let micros = skew.num_microseconds().unwrap_or(i64::MAX);
        self.skew_micros.store(micros, Ordering::Relaxed);
        Ok(skew)
    }
}

/// The local midpoint of a round trip minus the database time read during it.
fn skew(sent: DateTime<Utc>, database: DateTime<Utc>, received: DateTime<Utc>) -> TimeDelta {
    let midpoint = sent + (received - sent) / 2;
    midpoint - database
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(rfc3339: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(rfc3339).unwrap().to_utc()
    }

    #[test]
    fn skew_is_the_local_midpoint_minus_the_database_time() {
        let skew = skew(
            at("2026-12-01T10:00:00Z"),
            at("2026-12-01T09:59:58Z"),
            at("2026-12-01T10:00:02Z"),
        );
        assert_eq!(
            skew,
            TimeDelta::seconds(3),
            "midpoint 10:00:01 is three seconds ahead of the database"
        );
    }

    #[test]
    fn a_replica_behind_the_database_has_negative_skew() {
        let skew = skew(
            at("2026-12-01T10:00:00Z"),
            at("2026-12-01T10:00:00.750Z"),
            at("2026-12-01T10:00:00.500Z"),
        );
        assert_eq!(skew, TimeDelta::milliseconds(-500));
    }
}

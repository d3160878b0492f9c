//! A replica's clock, as measured against the database's.

use chrono::{DateTime, Utc};

/// The latest measurement of one replica's clock (`replica_clock`), recorded by that replica's
/// clock-skew probe and read by every replica's alert evaluation (the `CLOCK_SKEW` rule).
#[derive(Debug, Clone, PartialEq)]
pub struct ClockMeasurement {
    /// The replica (`FINESETTLE_INSTANCE_ID`).
    pub instance_id: String,
    /// The replica's clock minus the database's, in seconds: positive when the replica is ahead.
    pub skew_seconds: f64,
    /// When it was measured, by the database's clock.
    pub measured_at: DateTime<Utc>,
}

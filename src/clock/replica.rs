//! This replica's wall clock, with a seam for tests.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use chrono::{DateTime, TimeDelta, Utc};

/// This replica's wall clock: the system clock plus a shift that tests set or jump. Cheap to
/// clone; clones share the shift, so a jump is seen by every part of the replica at once.
#[derive(Debug, Clone, Default)]
pub struct Clock {
    /// Microseconds added to the system clock; 0 in production.
    shift_micros: Arc<AtomicI64>,
}

impl Clock {
    /// The system clock.
    pub fn system() -> Self {
        Self::default()
    }

    /// The system clock shifted by `by`: a host whose clock runs `by` ahead (or behind, when
    /// negative).
    pub fn shifted(by: TimeDelta) -> Self {
        let clock = Self::default();
        clock.jump(by);
        clock
    }

    /// Steps the clock by `by`, as an NTP step or a resumed VM does.
    pub fn jump(&self, by: TimeDelta) {
        let micros = by.num_microseconds().unwrap_or(i64::MAX);
        self.shift_micros.fetch_add(micros, Ordering::Relaxed);
    }

    /// What this replica believes the time is.
    pub fn now(&self) -> DateTime<Utc> {
        let shift = TimeDelta::microseconds(self.shift_micros.load(Ordering::Relaxed));
        Utc::now().checked_add_signed(shift).unwrap_or(DateTime::<Utc>::MAX_UTC)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shifted_clock_runs_ahead_and_jumps_add_up() {
        let clock = Clock::shifted(TimeDelta::hours(3));
        let ahead = clock.now() - Utc::now();
        assert!((ahead - TimeDelta::hours(3)).abs() < TimeDelta::seconds(1), "{ahead}");
        let copy = clock.clone();
        copy.jump(TimeDelta::hours(-4));
        let behind = clock.now() - Utc::now();
        assert!(
            (behind + TimeDelta::hours(1)).abs() < TimeDelta::seconds(1),
            "a clone shares the jump: {behind}"
        );
    }
}

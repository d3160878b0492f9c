//! The one exponential backoff of the service: a wait that starts at `first` and doubles after
//! each failure up to `max`. The job's refused fires, the closing of a failed execution record
//! and the alert webhook's deliveries all retry with it, each with its own bounds.

use std::time::Duration;

/// Bounds of an exponential backoff.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// The wait after the first failure.
    pub first: Duration,
    /// No wait is longer.
    pub max: Duration,
}

impl Backoff {
    pub const fn new(first: Duration, max: Duration) -> Self {
        Backoff { first, max }
    }

    /// The wait after `failures` failures in a row: `first` × 2^(failures − 1), capped at `max`
    /// (`first` for 0 or 1). For a count kept elsewhere, such as a row's `attempts` column.
    pub fn after(&self, failures: u32) -> Duration {
        let doublings = failures.saturating_sub(1).min(31);
        self.first.saturating_mul(1_u32 << doublings).min(self.max)
    }

    /// The waits of one retry loop, in order: `first`, 2 × `first`, …, then `max` forever.
    pub fn waits(&self) -> impl Iterator<Item = Duration> + Send + 'static {
        let backoff = *self;
        (1_u32..).map(move |failures| backoff.after(failures))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_doubles_after_each_failure_up_to_the_max() {
        let backoff = Backoff::new(Duration::from_secs(10), Duration::from_secs(1800));
        let waits: Vec<u64> = (1..=10).map(|n| backoff.after(n).as_secs()).collect();
        assert_eq!(waits, [10, 20, 40, 80, 160, 320, 640, 1280, 1800, 1800]);
        assert_eq!(backoff.after(0), backoff.first);
        assert_eq!(backoff.after(u32::MAX), backoff.max);
        assert_eq!(Backoff::new(Duration::ZERO, backoff.max).after(5), Duration::ZERO);
    }

    #[test]
    fn a_retry_loop_waits_in_doubling_steps_then_at_the_max() {
        let backoff = Backoff::new(Duration::from_secs(1), Duration::from_secs(60));
        let waits: Vec<u64> = backoff.waits().take(9).map(|wait| wait.as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 60, 60, 60]);
    }
}

//! The pace of the background loops (alert evaluation and delivery, reminder polling): a tick
//! every period until the process stops.

use std::time::Duration;

use tokio::time::{Interval, MissedTickBehavior};
use tokio_util::sync::CancellationToken;

/// An interval that ends when `stop` is cancelled: `while ticks.next().await { step }`.
///
/// The first tick is immediate. A step that overruns its period delays the next tick instead of
/// firing a burst to catch up ([`MissedTickBehavior::Delay`]): after a database outage a loop
/// resumes its pace rather than running the missed steps back to back.
pub struct Ticks<'a> {
    interval: Interval,
    stop: &'a CancellationToken,
}

impl<'a> Ticks<'a> {
    pub fn new(every: Duration, stop: &'a CancellationToken) -> Self {
        let mut interval = tokio::time::interval(every);
        interval.set_missed_tick_behavior(MissedTickBehavior::Delay);
        Ticks { interval, stop }
    }

    /// Waits for the next tick: `true`, or `false` once `stop` is cancelled (at once if it
    /// already is).
    pub async fn next(&mut self) -> bool {
        tokio::select! {
            biased;
            () = self.stop.cancelled() => false,
            _ = self.interval.tick() => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn ticks_at_once_then_every_period_and_ends_at_stop() {
        let stop = CancellationToken::new();
        let mut ticks = Ticks::new(Duration::from_secs(60), &stop);
        let started = tokio::time::Instant::now();
        assert!(ticks.next().await);
        assert_eq!(started.elapsed(), Duration::ZERO);
        assert!(ticks.next().await);
        assert_eq!(started.elapsed(), Duration::from_secs(60));
        stop.cancel();
        assert!(!ticks.next().await);
    }
}

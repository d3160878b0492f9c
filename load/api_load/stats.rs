//! Throughput and latency percentiles of a set of requests.

use std::time::Duration;

use crate::clients::{Op, Sample};

/// The requests of one operation (or all of them) in a window.
#[derive(Debug, Clone)]
pub struct OpStats {
    /// `None` for all operations together.
    pub op: Option<Op>,
    pub requests: usize,
    pub errors: usize,
    pub per_second: f64,
    pub p50: Duration,
    pub p99: Duration,
    pub max: Duration,
}

/// One row per operation, in [`Op::ALL`] order, then the total.
pub fn by_op(samples: &[Sample], window: Duration) -> Vec<OpStats> {
    let mut rows: Vec<OpStats> = Op::ALL
        .iter()
        .map(|&op| summarize(Some(op), samples.iter().filter(|s| s.op == op), window))
        .collect();
    rows.push(overall(samples, window));
    rows
}

pub fn overall(samples: &[Sample], window: Duration) -> OpStats {
    summarize(None, samples.iter(), window)
}

fn summarize<'a>(op: Option<Op>, samples: impl Iterator<Item = &'a Sample>, window: Duration) -> OpStats {
    let mut latencies = Vec::new();
    let mut errors = 0;
    for sample in samples {
        latencies.push(sample.latency);
        errors += usize::from(!sample.ok);
    }
    latencies.sort_unstable();
    let seconds = window.as_secs_f64();
    OpStats {
        op,
        requests: latencies.len(),
        errors,
        per_second: if seconds > 0.0 {
            latencies.len() as f64 / seconds
        } else {
            0.0
        },
        p50: percentile(&latencies, 0.50),
        p99: percentile(&latencies, 0.99),
        max: latencies.last().copied().unwrap_or_default(),
    }
}

/// Nearest-rank percentile of sorted values: the smallest value with at least `p` of the values
/// at or below it.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = (p * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank() {
        let values: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        assert_eq!(percentile(&values, 0.50), Duration::from_millis(50));
        assert_eq!(percentile(&values, 0.99), Duration::from_millis(99));
        assert_eq!(percentile(&values[..1], 0.99), Duration::from_millis(1));
        assert_eq!(percentile(&[], 0.5), Duration::ZERO);
    }
}

//! The reminders' metric instruments, one typed function per fact, like `telemetry::metrics`.
//!
//! The instruments are created on first use from the global meter provider. In the service that
//! is after `telemetry::init` has installed it (the first use is a loan request or the worker's
//! first tick), so they export; in unit tests and tools they are no-ops.

use std::sync::OnceLock;

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Gauge};

use super::QueueStats;

struct Instruments {
    delivered: Counter<u64>,
    redelivered: Counter<u64>,
    restored: Counter<u64>,
    redis_errors: Counter<u64>,
    depth: Gauge<u64>,
    in_flight: Gauge<u64>,
    oldest_due_age: Gauge<f64>,
}

static INSTRUMENTS: OnceLock<Instruments> = OnceLock::new();

fn instruments() -> &'static Instruments {
    INSTRUMENTS.get_or_init(|| {
        let meter = opentelemetry::global::meter("finesettle");
        Instruments {
            delivered: meter
                .u64_counter("finesettle.reminders.delivered")
                .with_unit("{reminder}")
                .with_description(
                    "Reminders taken from the queue and acknowledged, by outcome: RECORDED (a new \
                     notification), SKIPPED (sent before, loan returned, or no longer relevant)",
                )
                .build(),
            redelivered: meter
                .u64_counter("finesettle.reminders.redelivered")
                .with_unit("{reminder}")
                .with_description(
                    "Reminders put back in the queue because their consumer did not acknowledge them in time",
                )
                .build(),
            restored: meter
                .u64_counter("finesettle.reminders.restored")
                .with_unit("{reminder}")
                .with_description("Reminders the reconciler found neither recorded nor queued, and queued again")
                .build(),
            redis_errors: meter
                .u64_counter("finesettle.reminders.redis_errors")
                .with_unit("{error}")
                .with_description(
                    "Reminder queue operations that failed because Redis was unreachable or refused, by operation",
                )
                .build(),
            depth: meter
                .u64_gauge("finesettle.reminders.queue.depth")
                .with_unit("{reminder}")
                .with_description("Reminders waiting in the queue, due or not")
                .build(),
            in_flight: meter
                .u64_gauge("finesettle.reminders.queue.in_flight")
                .with_unit("{reminder}")
                .with_description("Reminders taken by a consumer and not yet acknowledged")
                .build(),
            oldest_due_age: meter
                .f64_gauge("finesettle.reminders.queue.oldest_due_age")
                .with_unit("s")
                .with_description("How long ago the reminder at the head of the queue was due (0 when none is due)")
                .build(),
        }
    })
}

/// Reminders acknowledged after a delivery: `recorded` new notifications, `skipped` others.
pub fn delivered(recorded: u64, skipped: u64) {
    let i = instruments();
    i.delivered.add(recorded, &[KeyValue::new("outcome", "RECORDED")]);
    i.delivered.add(skipped, &[KeyValue::new("outcome", "SKIPPED")]);
}

/// Reminders the reaper put back in the queue.
pub fn redelivered(count: u64) {
    instruments().redelivered.add(count, &[]);
}

/// Reminders the reconciler queued again.
pub fn restored(count: u64) {
    instruments().restored.add(count, &[]);
}

/// One failed queue operation (`schedule`, `take`, `ack`, `reap`, `cancel`, `stats`).
pub fn redis_error(operation: &'static str) {
    instruments()
        .redis_errors
        .add(1, &[KeyValue::new("operation", operation)]);
}

/// The queue as seen at `now_ms`.
pub fn queue(stats: &QueueStats, now_ms: i64) {
    let i = instruments();
    i.depth.record(stats.depth, &[]);
    i.in_flight.record(stats.in_flight, &[]);
    let age_ms = stats
        .oldest_due_at
        .map_or(0, |due| now_ms.saturating_sub(due.timestamp_millis()).max(0));
    i.oldest_due_age.record(age_ms as f64 / 1000.0, &[]);
}

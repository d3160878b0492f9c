//! The service's metric instruments, behind one typed function per fact worth counting.
//!
//! Callers say what happened (`job_execution`, `lock_attempt`, ...) and never touch instrument
//! names, units or attribute keys, so those stay consistent and stable for dashboards. Every
//! instrument is named `finesettle.*`; durations and times are in seconds (unit `s`).
//!
//! Before `telemetry::init` (unit tests, tools) every function is a no-op. After it, values go
//! to the OTLP meter provider when metrics are exported, and to OpenTelemetry's no-op provider
//! otherwise, so call sites never need to know whether export is on.

use std::sync::OnceLock;
use std::time::Duration;

use opentelemetry::metrics::{Counter, Gauge, Histogram, Meter};
use opentelemetry::{InstrumentationScope, KeyValue};

use crate::domain::TaskName;

/// Boundaries for job durations, in seconds: a date usually settles in seconds, a long backfill
/// in minutes, and the timeout alert is at 30 minutes by default.
const JOB_DURATION_BUCKETS: [f64; 14] = [
    0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0,
];

/// Boundaries for HTTP request durations, in seconds: OpenTelemetry's recommendation for
/// `http.server.request.duration`.
const HTTP_DURATION_BUCKETS: [f64; 14] = [
    0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
];

struct Instruments {
    job_executions: Counter<u64>,
    job_duration: Histogram<f64>,
    rows_accrued: Counter<u64>,
    rows_settled: Counter<u64>,
    lock_attempts: Counter<u64>,
    lease_renewals: Counter<u64>,
    last_success: Gauge<i64>,
    clock_skew: Gauge<f64>,
    alerts_active: Gauge<i64>,
    synchronous_standby: Gauge<i64>,
    http_requests: Counter<u64>,
    http_duration: Histogram<f64>,
}

static INSTRUMENTS: OnceLock<Instruments> = OnceLock::new();

/// Creates the instruments from the global meter provider. Called by `telemetry::init` once the
/// provider is installed: instruments created earlier would stay bound to the no-op provider.
pub(super) fn install() {
    let scope = InstrumentationScope::builder("finesettle")
        .with_version(env!("CARGO_PKG_VERSION"))
        .build();
    INSTRUMENTS.get_or_init(|| Instruments::new(&opentelemetry::global::meter_with_scope(scope)));
}

impl Instruments {
    fn new(meter: &Meter) -> Self {
        Instruments {
            job_executions: meter
                .u64_counter("finesettle.job.executions")
                .with_unit("{execution}")
                .with_description("Job executions (one per business date processed), by task, trigger and final status")
                .build(),
            job_duration: meter
                .f64_histogram("finesettle.job.execution.duration")
                .with_unit("s")
                .with_description("Time from the start of an execution to its final status")
                .with_boundaries(JOB_DURATION_BUCKETS.to_vec())
                .build(),
            rows_accrued: meter
                .u64_counter("finesettle.settlement.rows.accrued")
                .with_unit("{row}")
                .with_description("Fine rows inserted or updated by accrual")
                .build(),
            rows_settled: meter
                .u64_counter("finesettle.settlement.rows.settled")
                .with_unit("{row}")
                .with_description("Fines moved from PENDING to SETTLED, each with its CHARGE")
                .build(),
            lock_attempts: meter
                .u64_counter("finesettle.lock.attempts")
                .with_unit("{attempt}")
                .with_description("Attempts to take a job lock, by outcome")
                .build(),
            lease_renewals: meter
                .u64_counter("finesettle.lock.lease_renewals")
                .with_unit("{renewal}")
                .with_description("Lease renewals of a held job lock, by outcome")
                .build(),
            last_success: meter
                .i64_gauge("finesettle.job.last_success")
                .with_unit("s")
                .with_description("Unix time of the last successful execution of a task seen by this replica")
                .build(),
            clock_skew: meter
                .f64_gauge("finesettle.clock.skew")
                .with_unit("s")
                .with_description("This replica's clock minus the database clock")
                .build(),
            alerts_active: meter
                .i64_gauge("finesettle.alerts.active")
                .with_unit("{alert}")
                .with_description("Alerts currently raised and not resolved, by kind")
                .build(),
            synchronous_standby: meter
                .i64_gauge("finesettle.database.synchronous_standby")
                .with_unit("{bool}")
                .with_description(
                    "1 when the primary waits for a synchronous standby, 0 when a failover can lose acknowledged \
                     writes; attribute replication: synchronous, asynchronous or none",
                )
                .build(),
            http_requests: meter
                .u64_counter("finesettle.http.server.requests")
                .with_unit("{request}")
                .with_description("HTTP requests answered, by route template, method and status")
                .build(),
            http_duration: meter
                .f64_histogram("finesettle.http.server.duration")
                .with_unit("s")
                .with_description("Time from receiving an HTTP request to sending its response head")
                .with_boundaries(HTTP_DURATION_BUCKETS.to_vec())
                .build(),
        }
    }
}

fn with_instruments(record: impl FnOnce(&Instruments)) {
    if let Some(instruments) = INSTRUMENTS.get() {
        record(instruments);
    }
}

/// One execution (one business date of one fire) ended. `trigger`: `cron`, `startup`, `manual`;
/// `status`: the final `task_execution.status` (`SUCCESS`, `FAILED`).
pub fn job_execution(task: &TaskName, trigger: &str, status: &str, duration: Duration) {
    with_instruments(|i| {
        let attributes = [
            KeyValue::new("task", task.to_string()),
            KeyValue::new("trigger", trigger.to_owned()),
            KeyValue::new("status", status.to_owned()),
        ];
        i.job_executions.add(1, &attributes);
        i.job_duration.record(duration.as_secs_f64(), &attributes);
    });
}

/// Rows written by one business date of `task`: fines accrued and fines settled.
pub fn rows(task: &TaskName, accrued: u64, settled: u64) {
    with_instruments(|i| {
        let attributes = [KeyValue::new("task", task.to_string())];
        i.rows_accrued.add(accrued, &attributes);
        i.rows_settled.add(settled, &attributes);
    });
}

/// One attempt to take `task`'s lock. `outcome`: `WON`, `HELD` (another replica has it), `BUSY`
/// (this process is still running the previous fire), `LOST_LEASE`, `UNAVAILABLE` (the lock
/// store did not answer), `NOTHING_TO_DO`.
pub fn lock_attempt(task: &TaskName, outcome: &str) {
    with_instruments(|i| {
        i.lock_attempts.add(
            1,
            &[
                KeyValue::new("task", task.to_string()),
                KeyValue::new("outcome", outcome.to_owned()),
            ],
        );
    });
}

/// One renewal of `task`'s lease; `ok == false` means the lease was not extended (lost, or the
/// lock store failed), after which the holder stops.
pub fn lease_renewal(task: &TaskName, ok: bool) {
    with_instruments(|i| {
        let outcome = if ok { "RENEWED" } else { "FAILED" };
        i.lease_renewals.add(
            1,
            &[
                KeyValue::new("task", task.to_string()),
                KeyValue::new("outcome", outcome),
            ],
        );
    });
}

/// `task` last succeeded at `unix_seconds` (the `finished_at` of its latest SUCCESS).
pub fn last_success(task: &TaskName, unix_seconds: i64) {
    with_instruments(|i| {
        i.last_success
            .record(unix_seconds, &[KeyValue::new("task", task.to_string())])
    });
}

/// This replica's clock minus the database clock, in seconds (positive: this replica is ahead).
pub fn clock_skew(seconds: f64) {
    with_instruments(|i| i.clock_skew.record(seconds, &[]));
}

/// `value` alerts of `kind` (`FAILED`, `TIMEOUT`, `MISSED`, `AUDIT`, `CLOCK_SKEW`,
/// `DATABASE_FAILOVER`) are active now.
pub fn alerts_active(kind: &str, value: i64) {
    with_instruments(|i| i.alerts_active.record(value, &[KeyValue::new("kind", kind.to_owned())]));
}

/// The primary's replication as last read (`synchronous`, `asynchronous`, `none`): 1 when it is
/// synchronous, 0 when writes it acknowledges can be lost by a failover.
pub fn replication(mode: &'static str) {
    with_instruments(|i| {
        i.synchronous_standby
            .record(i64::from(mode == "synchronous"), &[KeyValue::new("replication", mode)])
    });
}

/// One HTTP request answered. `route` is the matched route template (`/api/v1/members/{id}`), or
/// `None` when no route matched, so the number of series stays bounded whatever paths clients
/// send. `method` must already be normalized (unknown methods as `_OTHER`).
pub fn http_request(route: Option<&str>, method: &'static str, status: u16, duration: Duration) {
    with_instruments(|i| {
        let mut attributes = Vec::with_capacity(3);
        attributes.push(KeyValue::new("http.request.method", method));
        attributes.push(KeyValue::new("http.response.status_code", i64::from(status)));
        if let Some(route) = route {
            attributes.push(KeyValue::new("http.route", route.to_owned()));
        }
        i.http_requests.add(1, &attributes);
        i.http_duration.record(duration.as_secs_f64(), &attributes);
    });
}

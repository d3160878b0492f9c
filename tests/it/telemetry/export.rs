//! Spans, log records and every metric of the typed API reach an OTLP/HTTP collector.

use std::collections::BTreeMap;
use std::time::Duration;

use finesettle::telemetry::{self, Exporting, metrics};
use opentelemetry_proto::tonic::metrics::v1::{Metric, metric, number_data_point};
use reqwest::Method;
use tokio_util::sync::CancellationToken;

use crate::common::{READER_TOKEN, spawn_app};
use crate::telemetry::child;
use crate::telemetry::collector::{Collector, attributes, expected};

const TASK: &str = "settle-fines";

#[tokio::test(flavor = "multi_thread")]
async fn spans_events_and_every_metric_reach_the_collector() {
    if child::is_child() {
        return emit_a_settlement_and_http_traffic().await;
    }
    let collector = Collector::start().await;
    child::run(
        "telemetry::export::spans_events_and_every_metric_reach_the_collector",
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url()),
            ("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment.name=test"),
            ("FINESETTLE_INSTANCE_ID", "replica-7"),
        ],
    )
    .await;

    let received = collector.received();
    let mut paths: Vec<&str> = received.iter().map(|r| r.path.as_str()).collect();
    paths.sort_unstable();
    paths.dedup();
    assert_eq!(paths, ["/v1/logs", "/v1/metrics", "/v1/traces"]);
    assert!(received.iter().all(|r| r.content_type == "application/x-protobuf"));
    for resource in collector.resources() {
        assert_eq!(resource["service.name"], "finesettle");
        assert_eq!(resource["service.instance.id"], "replica-7");
        assert_eq!(resource["deployment.environment.name"], "test");
    }

    // The job's spans, parent and child, as the runner creates them with tracing.
    let spans = collector.spans();
    let fire = spans.iter().find(|s| s.name == "job.fire").expect("a job.fire span");
    let date = spans.iter().find(|s| s.name == "job.date").expect("a job.date span");
    assert_eq!(attributes(&fire.attributes)["job.task_name"], TASK);
    assert_eq!(attributes(&date.attributes)["job.business_date"], "2026-11-30");
    assert_eq!((&date.trace_id, &date.parent_span_id), (&fire.trace_id, &fire.span_id));
    assert_eq!(
        spans.iter().filter(|s| s.name == "http.request").count(),
        4,
        "one span per HTTP request"
    );

    // The event, as a log record in the span it was emitted in.
    let records = collector.log_records();
    let alert = records
        .iter()
        .find(|r| {
            attributes(&r.attributes)
                .get("alert.kind")
                .is_some_and(|k| k == "FAILED")
        })
        .expect("the alert event as a log record");
    assert_eq!(alert.severity_text, "WARN");
    assert_eq!(
        format!("{:?}", alert.body),
        format!("{:?}", Some(string_value("alert raised")))
    );
    assert_eq!((&alert.trace_id, &alert.span_id), (&date.trace_id, &date.span_id));

    let series = |name: &str| series(&collector.metric(name).unwrap_or_else(|| panic!("no metric {name}")));
    let job = [("task", TASK), ("trigger", "manual"), ("status", "SUCCESS")];
    let failed = [("task", TASK), ("trigger", "cron"), ("status", "FAILED")];
    assert_eq!(
        series("finesettle.job.executions"),
        [(expected(&job), 1.0), (expected(&failed), 1.0)].into()
    );
    assert_eq!(
        series("finesettle.job.execution.duration"),
        [(expected(&job), 1.5), (expected(&failed), 0.25)].into(),
        "histogram sums, one execution each"
    );
    assert_eq!(
        series("finesettle.settlement.rows.accrued"),
        [(expected(&[("task", TASK)]), 7.0)].into()
    );
    assert_eq!(
        series("finesettle.settlement.rows.settled"),
        [(expected(&[("task", TASK)]), 3.0)].into()
    );
    assert_eq!(
        series("finesettle.lock.attempts"),
        [
            (expected(&[("task", TASK), ("outcome", "WON")]), 1.0),
            (expected(&[("task", TASK), ("outcome", "HELD")]), 2.0),
        ]
        .into()
    );
    assert_eq!(
        series("finesettle.lock.lease_renewals"),
        [
            (expected(&[("task", TASK), ("outcome", "RENEWED")]), 2.0),
            (expected(&[("task", TASK), ("outcome", "FAILED")]), 1.0),
        ]
        .into()
    );
    assert_eq!(
        series("finesettle.job.last_success"),
        [(expected(&[("task", TASK)]), 1_764_547_200.0)].into()
    );
    assert_eq!(
        series("finesettle.alerts.active"),
        [
            (expected(&[("kind", "FAILED")]), 1.0),
            (expected(&[("kind", "MISSED")]), 0.0)
        ]
        .into()
    );
    let skew = series("finesettle.clock.skew");
    assert_eq!(skew.len(), 1, "one replica-wide series: {skew:?}");
    assert!(skew[&BTreeMap::new()].is_finite());

    let request = |route: Option<&str>, method: &str, status: &str| {
        let mut attributes = expected(&[("http.request.method", method), ("http.response.status_code", status)]);
        if let Some(route) = route {
            attributes.insert("http.route".to_owned(), route.to_owned());
        }
        attributes
    };
    let requests = series("finesettle.http.server.requests");
    assert_eq!(
        requests.keys().cloned().collect::<Vec<_>>(),
        {
            let mut keys = vec![
                request(Some("/api/v1/members/{id}"), "GET", "404"),
                request(Some("/healthz"), "GET", "200"),
                request(Some("/healthz"), "_OTHER", "405"),
                request(None, "GET", "404"),
            ];
            keys.sort();
            keys
        },
        "route templates, never raw paths"
    );
    assert!(requests.values().all(|count| *count == 1.0));
    let durations = series("finesettle.http.server.duration");
    assert_eq!(
        durations.keys().collect::<Vec<_>>(),
        requests.keys().collect::<Vec<_>>()
    );

    for (name, unit) in [
        ("finesettle.job.execution.duration", "s"),
        ("finesettle.job.last_success", "s"),
        ("finesettle.clock.skew", "s"),
        ("finesettle.http.server.duration", "s"),
        ("finesettle.job.executions", "{execution}"),
        ("finesettle.http.server.requests", "{request}"),
    ] {
        assert_eq!(collector.metric(name).unwrap().unit, unit, "unit of {name}");
    }
}

/// The child: what one settlement fire and a few requests emit, then a flush at exit.
async fn emit_a_settlement_and_http_traffic() {
    telemetry::init();
    assert_eq!(
        telemetry::exporting(),
        Exporting {
            traces: true,
            metrics: true,
            logs: true
        }
    );
    {
        let fire = tracing::info_span!("job.fire", job.task_name = TASK, job.trigger = "manual");
        let _fire = fire.enter();
        let date = tracing::info_span!("job.date", job.business_date = "2026-11-30");
        let _date = date.enter();
        tracing::warn!(alert.kind = "FAILED", job.task_name = TASK, "alert raised");
    }
    metrics::job_execution(&TASK.into(), "manual", "SUCCESS", Duration::from_millis(1500));
    metrics::job_execution(&TASK.into(), "cron", "FAILED", Duration::from_millis(250));
    metrics::rows(&TASK.into(), 7, 3);
    metrics::lock_attempt(&TASK.into(), "WON");
    metrics::lock_attempt(&TASK.into(), "HELD");
    metrics::lock_attempt(&TASK.into(), "HELD");
    metrics::lease_renewal(&TASK.into(), true);
    metrics::lease_renewal(&TASK.into(), true);
    metrics::lease_renewal(&TASK.into(), false);
    metrics::last_success(&TASK.into(), 1_764_547_200);
    metrics::alerts_active("FAILED", 1);
    metrics::alerts_active("MISSED", 0);

    let app = spawn_app().await;
    // The probe measures once at start, then every minute; stopping it right away leaves one.
    let stop = CancellationToken::new();
    let probe = telemetry::spawn_clock_skew_probe(
        app.job.database_time().clone(),
        app.settings.instance_id.clone(),
        stop.clone(),
    );
    stop.cancel();
    probe.await.unwrap();

    app.request(Method::GET, "/api/v1/members/987654321", Some(READER_TOKEN), None)
        .await
        .problem(404);
    app.request(Method::GET, "/healthz", None, None).await.ok(200);
    app.request(Method::GET, "/no/such/path", None, None).await.problem(404);
    let purge = Method::from_bytes(b"PURGE").unwrap();
    app.request(purge, "/healthz", None, None).await.problem(405);
    // Stopped before the flush, so the request spans (closed when their bodies are sent) are done.
    app.stop().await;

    tokio::task::spawn_blocking(telemetry::shutdown).await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_signal_endpoint_exports_only_that_signal_to_that_url() {
    if child::is_child() {
        return child::emit_one_fire(Exporting {
            traces: false,
            metrics: true,
            logs: false,
        })
        .await;
    }
    let collector = Collector::start().await;
    let endpoint = format!("{}/custom/v1/metrics", collector.url());
    child::run(
        "telemetry::export::a_signal_endpoint_exports_only_that_signal_to_that_url",
        &[
            ("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", &endpoint),
            ("OTEL_SERVICE_NAME", "fines-test"),
        ],
    )
    .await;

    let received = collector.received();
    assert!(!received.is_empty());
    assert!(
        received.iter().all(|r| r.path == "/custom/v1/metrics"),
        "the signal endpoint is used as is: {:?}",
        received.iter().map(|r| &r.path).collect::<Vec<_>>()
    );
    assert!(collector.metric("finesettle.lock.attempts").is_some());
    assert!(collector.resources().iter().all(|r| r["service.name"] == "fines-test"));
}

fn string_value(text: &str) -> opentelemetry_proto::tonic::common::v1::AnyValue {
    opentelemetry_proto::tonic::common::v1::AnyValue {
        value: Some(opentelemetry_proto::tonic::common::v1::any_value::Value::StringValue(
            text.to_owned(),
        )),
    }
}

/// A metric's series: attributes to value (sums and gauges), or to the sum of the recorded
/// values (histograms).
fn series(metric: &Metric) -> BTreeMap<BTreeMap<String, String>, f64> {
    let number = |value: &Option<number_data_point::Value>| match value {
        Some(number_data_point::Value::AsInt(i)) => *i as f64,
        Some(number_data_point::Value::AsDouble(d)) => *d,
        None => f64::NAN,
    };
    match metric.data.as_ref().expect("metric data") {
        metric::Data::Sum(sum) => {
            assert!(sum.is_monotonic, "{} is a counter", metric.name);
            sum.data_points
                .iter()
                .map(|p| (attributes(&p.attributes), number(&p.value)))
                .collect()
        }
        metric::Data::Gauge(gauge) => gauge
            .data_points
            .iter()
            .map(|p| (attributes(&p.attributes), number(&p.value)))
            .collect(),
        metric::Data::Histogram(histogram) => histogram
            .data_points
            .iter()
            .map(|p| {
                assert_eq!(p.count, 1, "{}: one recording per series", metric.name);
                (attributes(&p.attributes), p.sum.expect("histogram sum"))
            })
            .collect(),
        other => panic!("{}: unexpected data {other:?}", metric.name),
    }
}

//! Without an OTLP endpoint, nothing is exported and nothing complains.

use std::time::Duration;

use finesettle::telemetry::{self, Exporting, metrics};

use crate::telemetry::child;

#[tokio::test(flavor = "multi_thread")]
async fn without_an_endpoint_nothing_is_exported_and_nothing_complains() {
    if child::is_child() {
        telemetry::init();
        assert_eq!(telemetry::exporting(), Exporting::default());
        tracing::info_span!("job.fire").in_scope(|| tracing::info!(job.task_name = "settle-fines", "fired"));
        metrics::job_execution(&"settle-fines".into(), "cron", "SUCCESS", Duration::from_secs(1));
        metrics::clock_skew(0.5);
        tokio::task::spawn_blocking(telemetry::shutdown).await.unwrap();
        return;
    }
    // Every other OTEL_* setting present: only an endpoint turns export on. Had an exporter been
    // built anyway, it would send to the default localhost:4318 and complain when that fails.
    let output = child::run(
        "telemetry::no_endpoint::without_an_endpoint_nothing_is_exported_and_nothing_complains",
        &[
            ("OTEL_SERVICE_NAME", "finesettle"),
            ("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment.name=test"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
            ("OTEL_METRIC_EXPORT_INTERVAL", "100"),
        ],
    )
    .await;

    let lines: Vec<serde_json::Value> = output
        .stderr
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|_| panic!("a JSON log line: {line}")))
        .collect();
    assert!(
        lines.iter().any(|l| l["message"] == "fired"),
        "stderr logging still works: {}",
        output.stderr
    );
    assert!(
        lines
            .iter()
            .all(|l| l["level"] == "INFO" || l["level"] == "DEBUG" || l["level"] == "TRACE"),
        "no warning or error: {}",
        output.stderr
    );
}

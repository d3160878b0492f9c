//! The standard variables reach the OTLP exporter and the SDK, which read them themselves: a base
//! endpoint gets `/v1/<signal>` (after a trailing slash too), headers and the sampler apply. And
//! what finesettle adds because the SDK lacks it: percent-decoded resource attributes.

use finesettle::telemetry::Exporting;
use opentelemetry::Key;
use opentelemetry_sdk::resource::{EnvResourceDetector, ResourceDetector};

use crate::telemetry::child;
use crate::telemetry::collector::Collector;

const ATTRIBUTES: &str = "team=lending%2Cfines,service.name=from-attributes";

#[tokio::test(flavor = "multi_thread")]
async fn the_exporter_and_the_sdk_read_the_standard_variables() {
    if child::is_child() {
        // Why telemetry parses OTEL_RESOURCE_ATTRIBUTES itself: the SDK's detector keeps escapes.
        let detected = EnvResourceDetector::new().detect();
        assert_eq!(
            detected.get(&Key::from_static_str("team")),
            Some("lending%2Cfines".into())
        );
        return child::emit_one_fire(Exporting {
            traces: true,
            metrics: true,
            logs: true,
        })
        .await;
    }
    let collector = Collector::start().await;
    let base_with_slash = format!("{}/", collector.url());
    child::run(
        "telemetry::standard_variables::the_exporter_and_the_sdk_read_the_standard_variables",
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &base_with_slash),
            ("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20collector-token"),
            ("OTEL_TRACES_SAMPLER", "always_off"),
            ("OTEL_RESOURCE_ATTRIBUTES", ATTRIBUTES),
        ],
    )
    .await;

    let received = collector.received();
    let mut paths: Vec<&str> = received.iter().map(|r| r.path.as_str()).collect();
    paths.sort_unstable();
    paths.dedup();
    assert_eq!(
        paths,
        ["/v1/logs", "/v1/metrics"],
        "no spans sampled, so no trace export"
    );
    for request in &received {
        assert_eq!(request.headers["authorization"], "Bearer collector-token");
    }
    let host = gethostname::gethostname().to_string_lossy().into_owned();
    for resource in collector.resources() {
        assert_eq!(resource["team"], "lending,fines");
        assert_eq!(resource["service.name"], "from-attributes");
        assert!(
            resource["service.instance.id"].starts_with(&format!("{host}-")),
            "the default instance id of config, host name and process id: {resource:?}"
        );
    }
    assert!(collector.metric("finesettle.lock.attempts").is_some());
}

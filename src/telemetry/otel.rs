//! OpenTelemetry export over OTLP/HTTP with protobuf bodies, configured by the standard `OTEL_*`
//! variables.
//!
//! The exporter and the SDK read those variables themselves (as of opentelemetry-otlp and
//! opentelemetry_sdk 0.33): the endpoint of each signal (`OTEL_EXPORTER_OTLP_<SIGNAL>_ENDPOINT` as
//! is, else `OTEL_EXPORTER_OTLP_ENDPOINT` with `/v1/<signal>` appended), `..._HEADERS`,
//! `..._TIMEOUT`, `..._COMPRESSION`, `OTEL_TRACES_SAMPLER`, `OTEL_METRIC_EXPORT_INTERVAL`,
//! `OTEL_BSP_*` and `OTEL_BLRP_*`. This module adds only what they lack:
//!
//! - a signal with no endpoint is off: no exporter, no thread, no connection attempt, no message
//!   (the exporter's own default is `http://localhost:4318`);
//! - `OTEL_SDK_DISABLED` and `OTEL_{TRACES,METRICS,LOGS}_EXPORTER` (`otlp`, `none`), which neither
//!   crate reads;
//! - a protocol other than `http/protobuf` turns its signal off: this build has neither gRPC nor
//!   JSON, and the exporter would ignore the setting silently and send protobuf to a collector
//!   that expects something else, failing on every export;
//! - the resource: the SDK's `EnvResourceDetector` neither percent-decodes
//!   `OTEL_RESOURCE_ATTRIBUTES` nor rejects a malformed value, its `service.name` default is
//!   `unknown_service:<executable>`, and it knows no `service.instance.id`.
//!
//! Misconfiguration never stops the service: the signal concerned is not exported and the reason
//! is logged once at start-up as a warning.

use opentelemetry::KeyValue;
use opentelemetry_otlp as otlp;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::logs::SdkLoggerProvider;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::resource::TelemetryResourceDetector;
use opentelemetry_sdk::trace::SdkTracerProvider;

use crate::config;

/// `service.name` when neither `OTEL_SERVICE_NAME` nor `OTEL_RESOURCE_ATTRIBUTES` names one.
pub const DEFAULT_SERVICE_NAME: &str = "finesettle";

/// The only protocol this build speaks (the exporter is compiled with `http-proto` alone).
const HTTP_PROTOBUF: &str = otlp::OTEL_EXPORTER_OTLP_PROTOCOL_HTTP_PROTOBUF;

/// A signal and the variables that decide whether it is exported.
struct Signal {
    name: &'static str,
    exporter: &'static str,
    endpoint: &'static str,
    protocol: &'static str,
}

const TRACES: Signal = Signal {
    name: "traces",
    exporter: "OTEL_TRACES_EXPORTER",
    endpoint: otlp::OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
    protocol: otlp::OTEL_EXPORTER_OTLP_TRACES_PROTOCOL,
};
const METRICS: Signal = Signal {
    name: "metrics",
    exporter: "OTEL_METRICS_EXPORTER",
    endpoint: otlp::OTEL_EXPORTER_OTLP_METRICS_ENDPOINT,
    protocol: otlp::OTEL_EXPORTER_OTLP_METRICS_PROTOCOL,
};
const LOGS: Signal = Signal {
    name: "logs",
    exporter: "OTEL_LOGS_EXPORTER",
    endpoint: otlp::OTEL_EXPORTER_OTLP_LOGS_ENDPOINT,
    protocol: otlp::OTEL_EXPORTER_OTLP_LOGS_PROTOCOL,
};

/// A setting that was ignored, and why. Logged as a warning once the subscriber is installed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub variable: &'static str,
    pub value: String,
    pub reason: String,
}

impl Problem {
    fn new(variable: &'static str, value: impl Into<String>, reason: impl Into<String>) -> Self {
        Problem {
            variable,
            value: value.into(),
            reason: reason.into(),
        }
    }

    pub fn log(&self) {
        tracing::warn!(
            otel.variable = self.variable,
            otel.value = %self.value,
            otel.reason = %self.reason,
            "opentelemetry setting ignored"
        );
    }
}

/// Which signals are exported (the endpoint setting that turned each on; `None`: off) and what
/// the resource says about this process.
#[derive(Debug, Clone, PartialEq)]
pub struct OtelConfig {
    pub traces: Option<String>,
    pub metrics: Option<String>,
    pub logs: Option<String>,
    pub resource: Resource,
    pub problems: Vec<Problem>,
}

impl OtelConfig {
    pub fn from_env() -> Self {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Decides from `lookup` (the process environment in production, a map in tests). Empty
    /// values count as unset, as the OpenTelemetry specification asks.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Self {
        let get = |name: &str| lookup(name).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
        let mut problems = Vec::new();
        let disabled = get("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true"));
        let mut endpoint = |signal| {
            if disabled {
                None
            } else {
                signal_endpoint(signal, &get, &mut problems)
            }
        };
        OtelConfig {
            traces: endpoint(&TRACES),
            metrics: endpoint(&METRICS),
            logs: endpoint(&LOGS),
            resource: resource(&get, &mut problems),
            problems,
        }
    }
}

/// The endpoint setting of a signal that is exported, or `None` when it is not. Where exactly it
/// goes (a base URL gets `/v1/<signal>`) the exporter resolves itself.
fn signal_endpoint(
    signal: &Signal,
    get: &impl Fn(&str) -> Option<String>,
    problems: &mut Vec<Problem>,
) -> Option<String> {
    if let Some(exporters) = get(signal.exporter) {
        let names: Vec<&str> = exporters.split(',').map(str::trim).collect();
        let ignored: Vec<&str> = names
            .iter()
            .copied()
            .filter(|n| !matches!(*n, "otlp" | "none"))
            .collect();
        if !ignored.is_empty() {
            let reason = format!("only otlp is supported; {} ignored", ignored.join(", "));
            problems.push(Problem::new(signal.exporter, &exporters, reason));
        }
        if !names.contains(&"otlp") {
            return None;
        }
    }
    let endpoint = get(signal.endpoint).or_else(|| get(otlp::OTEL_EXPORTER_OTLP_ENDPOINT))?;
    let protocol = [signal.protocol, otlp::OTEL_EXPORTER_OTLP_PROTOCOL]
        .into_iter()
        .find_map(|var| Some((var, get(var)?)));
    if let Some((var, protocol)) = protocol.filter(|(_, protocol)| protocol != HTTP_PROTOBUF) {
        let reason = format!("only {HTTP_PROTOBUF} is supported; {} are not exported", signal.name);
        problems.push(Problem::new(var, protocol, reason));
        return None;
    }
    Some(endpoint)
}

/// The resource, later entries winning: the defaults, the SDK's `telemetry.sdk.*`,
/// `OTEL_RESOURCE_ATTRIBUTES`, then `OTEL_SERVICE_NAME` and `FINESETTLE_INSTANCE_ID`.
///
/// `service.instance.id` is the replica's id as `config` resolves it, the one it writes as
/// `locked_by` and `instance_id`, so a metric series, a lock row and an execution record name the
/// replica alike; every replica needs a distinct id, or their cumulative series collide.
fn resource(get: &impl Fn(&str) -> Option<String>, problems: &mut Vec<Problem>) -> Resource {
    let attributes = get("OTEL_RESOURCE_ATTRIBUTES").map_or_else(Vec::new, |raw| {
        parse_resource_attributes(&raw).unwrap_or_else(|reason| {
            problems.push(Problem::new("OTEL_RESOURCE_ATTRIBUTES", raw, reason));
            Vec::new()
        })
    });
    let overrides = [
        ("service.name", get("OTEL_SERVICE_NAME")),
        ("service.instance.id", get(config::INSTANCE_ID_VAR)),
    ];
    Resource::builder_empty()
        .with_attributes([
            KeyValue::new("service.name", DEFAULT_SERVICE_NAME),
            KeyValue::new("service.instance.id", config::default_instance_id()),
            KeyValue::new("service.version", env!("CARGO_PKG_VERSION")),
        ])
        .with_detector(Box::new(TelemetryResourceDetector))
        .with_attributes(attributes)
        .with_attributes(
            overrides
                .into_iter()
                .filter_map(|(key, value)| Some(KeyValue::new(key, value?))),
        )
        .build()
}

/// Parses `key1=value1,key2=value2` with percent-encoded values. Any malformed entry discards the
/// whole value, as the specification asks, rather than exporting half of what was meant.
fn parse_resource_attributes(raw: &str) -> Result<Vec<KeyValue>, String> {
    raw.split(',')
        .filter(|entry| !entry.trim().is_empty())
        .map(|entry| {
            let (key, value) = entry
                .split_once('=')
                .ok_or_else(|| format!("entry {entry:?} is not key=value"))?;
            let key = key.trim();
            if key.is_empty() {
                return Err(format!("entry {entry:?} has an empty key"));
            }
            let value = percent_decode(value.trim()).ok_or_else(|| format!("entry {entry:?} has a bad % escape"))?;
            Ok(KeyValue::new(key.to_owned(), value))
        })
        .collect()
}

fn percent_decode(value: &str) -> Option<String> {
    let bytes = value.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            decoded.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            decoded.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(decoded).ok()
}

/// The SDK providers for the signals that are exported. Each owns its exporter and a background
/// thread (batch processors, periodic reader), so exporting never blocks a request or the job.
#[derive(Default)]
pub struct Providers {
    pub tracer: Option<SdkTracerProvider>,
    pub meter: Option<SdkMeterProvider>,
    pub logger: Option<SdkLoggerProvider>,
}

impl Providers {
    /// Builds a provider for every signal that is on. Each exporter reads its own settings from
    /// the environment.
    pub fn build(config: &OtelConfig, problems: &mut Vec<Problem>) -> Providers {
        let resource = &config.resource;
        let traces = exporter(&TRACES, &config.traces, problems, || {
            otlp::SpanExporter::builder().with_http().build()
        });
        let metrics = exporter(&METRICS, &config.metrics, problems, || {
            otlp::MetricExporter::builder().with_http().build()
        });
        let logs = exporter(&LOGS, &config.logs, problems, || {
            otlp::LogExporter::builder().with_http().build()
        });
        Providers {
            tracer: traces.map(|exporter| {
                SdkTracerProvider::builder()
                    .with_batch_exporter(exporter)
                    .with_resource(resource.clone())
                    .build()
            }),
            meter: metrics.map(|exporter| {
                SdkMeterProvider::builder()
                    .with_reader(PeriodicReader::builder(exporter).build())
                    .with_resource(resource.clone())
                    .build()
            }),
            logger: logs.map(|exporter| {
                SdkLoggerProvider::builder()
                    .with_batch_exporter(exporter)
                    .with_resource(resource.clone())
                    .build()
            }),
        }
    }

    /// Exports what is buffered and stops the background threads. Blocks until the collector
    /// answered or the export timeout passed.
    pub fn shutdown(&self) {
        let results = [
            ("traces", self.tracer.as_ref().map(SdkTracerProvider::shutdown)),
            ("metrics", self.meter.as_ref().map(SdkMeterProvider::shutdown)),
            ("logs", self.logger.as_ref().map(SdkLoggerProvider::shutdown)),
        ];
        for (signal, result) in results {
            if let Some(Err(error)) = result {
                tracing::warn!(otel.signal = signal, error = %error, "opentelemetry flush at exit failed");
            }
        }
    }
}

/// The exporter of `signal` when it is on. One that cannot be built (a malformed URL) leaves its
/// signal off, with the reason in `problems`.
fn exporter<E>(
    signal: &Signal,
    endpoint: &Option<String>,
    problems: &mut Vec<Problem>,
    build: impl FnOnce() -> Result<E, otlp::ExporterBuildError>,
) -> Option<E> {
    let endpoint = endpoint.as_deref()?;
    build()
        .map_err(|error| problems.push(Problem::new(signal.endpoint, endpoint, error.to_string())))
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    use opentelemetry::Key;

    fn config(vars: &[(&str, &str)]) -> OtelConfig {
        let map: HashMap<&str, &str> = vars.iter().copied().collect();
        OtelConfig::from_lookup(|name| map.get(name).map(|v| (*v).to_owned()))
    }

    fn attribute(config: &OtelConfig, key: &'static str) -> Option<String> {
        config.resource.get(&Key::from_static_str(key)).map(|v| v.to_string())
    }

    #[test]
    fn nothing_is_exported_without_an_endpoint() {
        let config = config(&[("OTEL_SERVICE_NAME", "x"), ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]);
        assert_eq!((config.traces, config.metrics, config.logs), (None, None, None));
        assert!(config.problems.is_empty(), "{:?}", config.problems);
    }

    /// Where each goes (`/v1/<signal>` after a base URL) the exporter decides: tests/it/telemetry.
    #[test]
    fn a_signal_is_on_with_its_own_endpoint_or_the_base_one() {
        let config = config(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/"),
            ("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://metrics:9000/ingest"),
        ]);
        assert_eq!(config.traces.as_deref(), Some("http://collector:4318/"));
        assert_eq!(config.logs.as_deref(), Some("http://collector:4318/"));
        assert_eq!(config.metrics.as_deref(), Some("http://metrics:9000/ingest"));
    }

    #[test]
    fn a_signal_endpoint_alone_exports_only_that_signal() {
        let config = config(&[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://c/v1/traces")]);
        assert_eq!(config.traces.as_deref(), Some("http://c/v1/traces"));
        assert_eq!((config.metrics, config.logs), (None, None));
    }

    #[test]
    fn an_unsupported_protocol_turns_the_signal_off_with_a_reason() {
        let config = config(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ("OTEL_EXPORTER_OTLP_LOGS_PROTOCOL", "http/protobuf"),
        ]);
        assert_eq!((config.traces.as_deref(), config.metrics.as_deref()), (None, None));
        assert_eq!(config.logs.as_deref(), Some("http://c:4317"));
        assert_eq!(config.problems.len(), 2);
        assert!(
            config
                .problems
                .iter()
                .all(|p| p.variable == "OTEL_EXPORTER_OTLP_PROTOCOL")
        );
    }

    #[test]
    fn exporter_none_and_sdk_disabled_turn_signals_off() {
        let config_none = config(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c"),
            ("OTEL_METRICS_EXPORTER", "none"),
            ("OTEL_LOGS_EXPORTER", "console,otlp"),
        ]);
        assert_eq!(config_none.metrics, None);
        assert!(config_none.traces.is_some() && config_none.logs.is_some());
        assert_eq!(config_none.problems.len(), 1, "console is reported as ignored");

        let disabled = config(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c"),
            ("OTEL_SDK_DISABLED", "TRUE"),
        ]);
        assert_eq!((disabled.traces, disabled.metrics, disabled.logs), (None, None, None));
    }

    #[test]
    fn service_name_defaults_to_finesettle_and_the_standard_variables_win() {
        assert_eq!(attribute(&config(&[]), "service.name").as_deref(), Some("finesettle"));
        let from_attributes = config(&[("OTEL_RESOURCE_ATTRIBUTES", "service.name=lib")]);
        assert_eq!(attribute(&from_attributes, "service.name").as_deref(), Some("lib"));
        let both = config(&[
            ("OTEL_RESOURCE_ATTRIBUTES", "service.name=lib"),
            ("OTEL_SERVICE_NAME", "fines"),
        ]);
        assert_eq!(attribute(&both, "service.name").as_deref(), Some("fines"));
    }

    #[test]
    fn instance_id_and_resource_attributes_are_added() {
        let config = config(&[
            ("FINESETTLE_INSTANCE_ID", "replica-2"),
            (
                "OTEL_RESOURCE_ATTRIBUTES",
                "deployment.environment.name=prod, team = lending%2Cfines ,service.instance.id=x",
            ),
        ]);
        assert_eq!(attribute(&config, "service.instance.id").as_deref(), Some("replica-2"));
        assert_eq!(
            attribute(&config, "deployment.environment.name").as_deref(),
            Some("prod")
        );
        assert_eq!(attribute(&config, "team").as_deref(), Some("lending,fines"));
        assert!(attribute(&config, "service.version").is_some());
        assert!(attribute(&config, "telemetry.sdk.name").is_some());
    }

    #[test]
    fn without_finesettle_instance_id_the_configs_default_applies_unless_the_attributes_name_one() {
        assert_eq!(
            attribute(&config(&[]), "service.instance.id"),
            Some(config::default_instance_id())
        );
        let named = config(&[("OTEL_RESOURCE_ATTRIBUTES", "service.instance.id=pod-7")]);
        assert_eq!(attribute(&named, "service.instance.id").as_deref(), Some("pod-7"));
    }

    #[test]
    fn a_malformed_resource_attribute_discards_the_whole_value() {
        let config = config(&[("OTEL_RESOURCE_ATTRIBUTES", "a=1,broken,b=%zz")]);
        assert_eq!(attribute(&config, "a"), None);
        assert_eq!(config.problems.len(), 1);
        assert_eq!(config.problems[0].variable, "OTEL_RESOURCE_ATTRIBUTES");
        assert!(
            attribute(&config, "service.instance.id").is_some(),
            "a default id still applies"
        );
    }
}

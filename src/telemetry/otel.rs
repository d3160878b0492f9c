//! OpenTelemetry export, configured only by the standard `OTEL_*` variables.
//!
//! Each signal (traces, metrics, logs) is exported over OTLP/HTTP with protobuf bodies when an
//! endpoint for it is set: `OTEL_EXPORTER_OTLP_<SIGNAL>_ENDPOINT` (used as is) or
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (a base URL, `/v1/<signal>` appended). With neither set the
//! signal is simply off: no exporter, no thread, no connection attempt, no message. Settings the
//! OTLP exporter and the SDK read themselves (`OTEL_EXPORTER_OTLP_HEADERS`, `..._TIMEOUT`,
//! `..._COMPRESSION`, `OTEL_METRIC_EXPORT_INTERVAL`, `OTEL_BSP_*`, `OTEL_BLRP_*`,
//! `OTEL_TRACES_SAMPLER`) keep their standard meaning.
//!
//! Misconfiguration never stops the service: the signal concerned is not exported and the reason
//! is logged once at start-up as a warning.

use opentelemetry::KeyValue;
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::logs::SdkLoggerProvider;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::resource::TelemetryResourceDetector;
use opentelemetry_sdk::trace::SdkTracerProvider;

/// `service.name` when neither `OTEL_SERVICE_NAME` nor `OTEL_RESOURCE_ATTRIBUTES` names one.
pub const DEFAULT_SERVICE_NAME: &str = "finesettle";

/// The only OTLP protocol this build speaks (the exporter is compiled with `http-proto` only).
const HTTP_PROTOBUF: &str = "http/protobuf";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    Traces,
    Metrics,
    Logs,
}

impl Signal {
    pub const ALL: [Signal; 3] = [Signal::Traces, Signal::Metrics, Signal::Logs];

    fn name(self) -> &'static str {
        match self {
            Signal::Traces => "traces",
            Signal::Metrics => "metrics",
            Signal::Logs => "logs",
        }
    }

    fn endpoint_var(self) -> &'static str {
        match self {
            Signal::Traces => "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            Signal::Metrics => "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
            Signal::Logs => "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
        }
    }

    fn protocol_var(self) -> &'static str {
        match self {
            Signal::Traces => "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
            Signal::Metrics => "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
            Signal::Logs => "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL",
        }
    }

    fn exporter_var(self) -> &'static str {
        match self {
            Signal::Traces => "OTEL_TRACES_EXPORTER",
            Signal::Metrics => "OTEL_METRICS_EXPORTER",
            Signal::Logs => "OTEL_LOGS_EXPORTER",
        }
    }
}

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

/// Where each signal goes (`None`: not exported) and what the resource says about this process.
#[derive(Debug, Clone, PartialEq)]
pub struct OtelConfig {
    pub traces: Option<String>,
    pub metrics: Option<String>,
    pub logs: Option<String>,
    pub resource: Vec<KeyValue>,
    pub problems: Vec<Problem>,
}

impl OtelConfig {
    pub fn from_env() -> Self {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Resolves the configuration from `lookup` (the process environment in production, a map
    /// in tests). Empty values count as unset, as the OpenTelemetry specification asks.
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
        let (traces, metrics, logs) = (
            endpoint(Signal::Traces),
            endpoint(Signal::Metrics),
            endpoint(Signal::Logs),
        );
        let resource = resource_attributes(&get, &mut problems);
        OtelConfig {
            traces,
            metrics,
            logs,
            resource,
            problems,
        }
    }

    pub fn endpoint(&self, signal: Signal) -> Option<&str> {
        match signal {
            Signal::Traces => self.traces.as_deref(),
            Signal::Metrics => self.metrics.as_deref(),
            Signal::Logs => self.logs.as_deref(),
        }
    }
}

/// The URL `signal` is exported to, or `None` when it is not exported.
fn signal_endpoint(
    signal: Signal,
    get: &impl Fn(&str) -> Option<String>,
    problems: &mut Vec<Problem>,
) -> Option<String> {
    if let Some(exporters) = get(signal.exporter_var()) {
        let names: Vec<&str> = exporters.split(',').map(str::trim).collect();
        let unsupported: Vec<&str> = names
            .iter()
            .copied()
            .filter(|n| !matches!(*n, "otlp" | "none"))
            .collect();
        if !unsupported.is_empty() {
            problems.push(Problem::new(
                signal.exporter_var(),
                &exporters,
                format!("only otlp is supported; {} ignored", unsupported.join(", ")),
            ));
        }
        if !names.contains(&"otlp") {
            return None;
        }
    }
    let endpoint = get(signal.endpoint_var()).or_else(|| {
        get("OTEL_EXPORTER_OTLP_ENDPOINT").map(|base| format!("{}/v1/{}", base.trim_end_matches('/'), signal.name()))
    })?;
    let protocol_var = if get(signal.protocol_var()).is_some() {
        signal.protocol_var()
    } else {
        "OTEL_EXPORTER_OTLP_PROTOCOL"
    };
    if let Some(protocol) = get(protocol_var).filter(|p| p != HTTP_PROTOBUF) {
        problems.push(Problem::new(
            protocol_var,
            protocol,
            format!("only {HTTP_PROTOBUF} is supported; {} are not exported", signal.name()),
        ));
        return None;
    }
    Some(endpoint)
}

/// The resource attributes: `OTEL_RESOURCE_ATTRIBUTES`, then `service.name` (from
/// `OTEL_SERVICE_NAME`, else the attributes, else "finesettle") and `service.instance.id`.
///
/// `service.instance.id` is `FINESETTLE_INSTANCE_ID` when set, the same id the replica writes as
/// `locked_by` and `instance_id`, so a metric series, a lock row and an execution record name the
/// replica alike. Without it, host name plus process id (the service's own default instance id):
/// every replica needs a distinct id, or their cumulative series collide in the backend.
fn resource_attributes(get: &impl Fn(&str) -> Option<String>, problems: &mut Vec<Problem>) -> Vec<KeyValue> {
    let mut attributes = match get("OTEL_RESOURCE_ATTRIBUTES").map(|raw| parse_resource_attributes(&raw)) {
        None => Vec::new(),
        Some(Ok(pairs)) => pairs,
        Some(Err(reason)) => {
            let value = get("OTEL_RESOURCE_ATTRIBUTES").unwrap_or_default();
            problems.push(Problem::new("OTEL_RESOURCE_ATTRIBUTES", value, reason));
            Vec::new()
        }
    };
    let mut set = |key: &'static str, value: Option<String>, fallback: &dyn Fn() -> String| {
        let given = attributes.iter().position(|(k, _)| k == key);
        match (value, given) {
            (Some(value), Some(index)) => attributes[index].1 = value,
            (Some(value), None) => attributes.push((key.to_owned(), value)),
            (None, Some(_)) => {}
            (None, None) => attributes.push((key.to_owned(), fallback())),
        }
    };
    set("service.name", get("OTEL_SERVICE_NAME"), &|| {
        DEFAULT_SERVICE_NAME.to_owned()
    });
    set(
        "service.instance.id",
        get("FINESETTLE_INSTANCE_ID"),
        &default_instance_id,
    );
    set("service.version", None, &|| env!("CARGO_PKG_VERSION").to_owned());
    attributes.into_iter().map(|(k, v)| KeyValue::new(k, v)).collect()
}

/// Host name plus process id, as `config` computes the default `FINESETTLE_INSTANCE_ID`.
fn default_instance_id() -> String {
    let host = gethostname::gethostname().to_string_lossy().into_owned();
    format!("{host}-{}", std::process::id())
}

/// Parses `key1=value1,key2=value2` with percent-encoded values. Any malformed entry discards the
/// whole value, as the specification asks, rather than exporting half of what was meant.
fn parse_resource_attributes(raw: &str) -> Result<Vec<(String, String)>, String> {
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
            Ok((key.to_owned(), value))
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
    /// Builds a provider for every signal that has an endpoint. An exporter that cannot be built
    /// (a malformed URL) leaves its signal off and is reported in `problems`.
    pub fn build(config: &OtelConfig, problems: &mut Vec<Problem>) -> Providers {
        let resource = Resource::builder_empty()
            .with_detectors(&[Box::new(TelemetryResourceDetector)])
            .with_attributes(config.resource.iter().cloned())
            .build();
        let mut providers = Providers::default();
        for signal in Signal::ALL {
            let Some(endpoint) = config.endpoint(signal) else {
                continue;
            };
            let built = match signal {
                Signal::Traces => opentelemetry_otlp::SpanExporter::builder()
                    .with_http()
                    .with_protocol(Protocol::HttpBinary)
                    .with_endpoint(endpoint)
                    .build()
                    .map(|exporter| {
                        providers.tracer = Some(
                            SdkTracerProvider::builder()
                                .with_batch_exporter(exporter)
                                .with_resource(resource.clone())
                                .build(),
                        );
                    }),
                Signal::Metrics => opentelemetry_otlp::MetricExporter::builder()
                    .with_http()
                    .with_protocol(Protocol::HttpBinary)
                    .with_endpoint(endpoint)
                    .build()
                    .map(|exporter| {
                        providers.meter = Some(
                            SdkMeterProvider::builder()
                                .with_reader(PeriodicReader::builder(exporter).build())
                                .with_resource(resource.clone())
                                .build(),
                        );
                    }),
                Signal::Logs => opentelemetry_otlp::LogExporter::builder()
                    .with_http()
                    .with_protocol(Protocol::HttpBinary)
                    .with_endpoint(endpoint)
                    .build()
                    .map(|exporter| {
                        providers.logger = Some(
                            SdkLoggerProvider::builder()
                                .with_batch_exporter(exporter)
                                .with_resource(resource.clone())
                                .build(),
                        );
                    }),
            };
            if let Err(error) = built {
                problems.push(Problem::new(signal.endpoint_var(), endpoint, error.to_string()));
            }
        }
        providers
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn config(vars: &[(&str, &str)]) -> OtelConfig {
        let map: HashMap<&str, &str> = vars.iter().copied().collect();
        OtelConfig::from_lookup(|name| map.get(name).map(|v| (*v).to_owned()))
    }

    fn attribute(config: &OtelConfig, key: &str) -> Option<String> {
        config
            .resource
            .iter()
            .find(|kv| kv.key.as_str() == key)
            .map(|kv| kv.value.to_string())
    }

    #[test]
    fn nothing_is_exported_without_an_endpoint() {
        let config = config(&[("OTEL_SERVICE_NAME", "x"), ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]);
        assert_eq!((config.traces, config.metrics, config.logs), (None, None, None));
        assert!(config.problems.is_empty(), "{:?}", config.problems);
    }

    #[test]
    fn the_base_endpoint_gets_the_signal_path_and_a_signal_endpoint_is_used_as_is() {
        let config = config(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/"),
            ("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://metrics:9000/ingest"),
        ]);
        assert_eq!(config.traces.as_deref(), Some("http://collector:4318/v1/traces"));
        assert_eq!(config.logs.as_deref(), Some("http://collector:4318/v1/logs"));
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
        assert_eq!(config.logs.as_deref(), Some("http://c:4317/v1/logs"));
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
                "deployment.environment.name=prod, team = lending%2Cfines ,",
            ),
        ]);
        assert_eq!(attribute(&config, "service.instance.id").as_deref(), Some("replica-2"));
        assert_eq!(
            attribute(&config, "deployment.environment.name").as_deref(),
            Some("prod")
        );
        assert_eq!(attribute(&config, "team").as_deref(), Some("lending,fines"));
        assert!(attribute(&config, "service.version").is_some());
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

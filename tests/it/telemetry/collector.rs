//! A local OpenTelemetry collector for tests: an OTLP/HTTP receiver on 127.0.0.1 that keeps
//! every request and decodes the protobuf bodies with the OpenTelemetry protocol's own types.
//!
//! It accepts a POST on any path, so a test can also check where a signal was sent; bodies are
//! decoded by the standard path suffix (`/v1/traces`, `/v1/metrics`, `/v1/logs`).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::IntoResponse;
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{KeyValue, any_value};
use opentelemetry_proto::tonic::logs::v1::LogRecord;
use opentelemetry_proto::tonic::metrics::v1::Metric;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;

/// One POST as it arrived.
#[derive(Debug, Clone)]
pub struct Received {
    pub path: String,
    pub content_type: String,
    pub headers: HeaderMap,
    pub body: Bytes,
}

pub struct Collector {
    url: String,
    received: Arc<Mutex<Vec<Received>>>,
    server: tokio::task::JoinHandle<()>,
}

impl Collector {
    /// Starts the receiver on a free port of 127.0.0.1.
    pub async fn start() -> Collector {
        let received = Arc::new(Mutex::new(Vec::new()));
        let store = received.clone();
        let app = axum::Router::new().fallback(move |uri: Uri, headers: HeaderMap, body: Bytes| {
            let store = store.clone();
            async move {
                let content_type = headers
                    .get(header::CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_owned();
                store.lock().unwrap().push(Received {
                    path: uri.path().to_owned(),
                    content_type,
                    headers,
                    body,
                });
                // An empty body is a valid Export*ServiceResponse: everything accepted.
                (
                    StatusCode::OK,
                    [(header::CONTENT_TYPE, "application/x-protobuf")],
                    Bytes::new(),
                )
                    .into_response()
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let server = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Collector { url, received, server }
    }

    /// The base URL, as `OTEL_EXPORTER_OTLP_ENDPOINT` takes it.
    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }

    fn bodies(&self, signal: &str) -> Vec<Bytes> {
        let suffix = format!("/v1/{signal}");
        self.received()
            .into_iter()
            .filter(|r| r.path.ends_with(&suffix))
            .map(|r| r.body)
            .collect()
    }

    pub fn trace_requests(&self) -> Vec<ExportTraceServiceRequest> {
        self.bodies("traces")
            .iter()
            .map(|b| ExportTraceServiceRequest::decode(b.as_ref()).expect("a protobuf trace export"))
            .collect()
    }

    pub fn metric_requests(&self) -> Vec<ExportMetricsServiceRequest> {
        self.bodies("metrics")
            .iter()
            .map(|b| ExportMetricsServiceRequest::decode(b.as_ref()).expect("a protobuf metrics export"))
            .collect()
    }

    pub fn log_requests(&self) -> Vec<ExportLogsServiceRequest> {
        self.bodies("logs")
            .iter()
            .map(|b| ExportLogsServiceRequest::decode(b.as_ref()).expect("a protobuf logs export"))
            .collect()
    }

    /// Every span received, whatever resource or scope it came with.
    pub fn spans(&self) -> Vec<Span> {
        self.trace_requests()
            .into_iter()
            .flat_map(|r| r.resource_spans)
            .flat_map(|r| r.scope_spans)
            .flat_map(|s| s.spans)
            .collect()
    }

    pub fn log_records(&self) -> Vec<LogRecord> {
        self.log_requests()
            .into_iter()
            .flat_map(|r| r.resource_logs)
            .flat_map(|r| r.scope_logs)
            .flat_map(|s| s.log_records)
            .collect()
    }

    /// The metrics of the last export that carried `name`: with cumulative temporality, the last
    /// export holds every series' total.
    pub fn metric(&self, name: &str) -> Option<Metric> {
        self.metric_requests()
            .into_iter()
            .flat_map(|r| r.resource_metrics)
            .flat_map(|r| r.scope_metrics)
            .flat_map(|s| s.metrics)
            .rfind(|m| m.name == name)
    }

    /// The resource attributes of every export, whichever signal.
    pub fn resources(&self) -> Vec<BTreeMap<String, String>> {
        let traces = self
            .trace_requests()
            .into_iter()
            .flat_map(|r| r.resource_spans)
            .filter_map(|r| r.resource);
        let metrics = self
            .metric_requests()
            .into_iter()
            .flat_map(|r| r.resource_metrics)
            .filter_map(|r| r.resource);
        let logs = self
            .log_requests()
            .into_iter()
            .flat_map(|r| r.resource_logs)
            .filter_map(|r| r.resource);
        traces
            .chain(metrics)
            .chain(logs)
            .map(|r| attributes(&r.attributes))
            .collect()
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// Attributes as `key -> value` text: strings as they are, numbers and booleans printed.
pub fn attributes(attributes: &[KeyValue]) -> BTreeMap<String, String> {
    attributes
        .iter()
        .map(|kv| {
            let value = match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                Some(any_value::Value::StringValue(s)) => s.clone(),
                Some(any_value::Value::IntValue(i)) => i.to_string(),
                Some(any_value::Value::DoubleValue(d)) => d.to_string(),
                Some(any_value::Value::BoolValue(b)) => b.to_string(),
                other => format!("{other:?}"),
            };
            (kv.key.clone(), value)
        })
        .collect()
}

/// `[("k", "v"), ...]` as the map [`attributes`] returns, for comparisons.
pub fn expected(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

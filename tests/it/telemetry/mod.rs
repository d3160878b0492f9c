//! OpenTelemetry export, end to end: a local OTLP/HTTP collector receives the spans, log records
//! and metrics the service emits, configured only by the standard `OTEL_*` variables.

mod child;
mod collector;

mod export;
mod no_endpoint;
mod standard_variables;

//! Logging, tracing, metrics and their OpenTelemetry export.
//!
//! `tracing` is the instrumentation API everywhere; this module decides where it goes. Every
//! event is a JSON line on stderr (rules in docs/LOGGING.md). When the standard `OTEL_*`
//! variables name an OTLP endpoint, spans are also exported as OpenTelemetry spans, events as
//! OpenTelemetry log records (carrying the trace and span ids of the span they happened in), and
//! the instruments of [`metrics`] as OpenTelemetry metrics. See [`otel`] for the variables.
//!
//! `main` calls [`init`] first and [`shutdown`] last, after the command returned, so what is still
//! buffered (the last spans, the final metric values, the line saying why the process stopped)
//! reaches the collector.

mod clock_skew;
pub mod metrics;
pub mod otel;

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_appender_tracing::layer::OpenTelemetryTracingBridge;
use tracing::Metadata;
use tracing_subscriber::layer::{Layered, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer, Registry, filter};

pub use clock_skew::{CLOCK_SKEW_PROBE_INTERVAL, spawn_clock_skew_probe};
use otel::{OtelConfig, Providers};

/// Which signals this process exports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Exporting {
    pub traces: bool,
    pub metrics: bool,
    pub logs: bool,
}

struct Installed {
    providers: Providers,
    exporting: Exporting,
}

static INSTALLED: OnceLock<Installed> = OnceLock::new();

/// Set by [`shutdown`]: spans and events after it are no longer handed to the (stopped)
/// exporters, which would otherwise complain about each one.
static SHUT_DOWN: AtomicBool = AtomicBool::new(false);

/// Installs the global subscriber and, when configured by the `OTEL_*` variables, the
/// OpenTelemetry providers. Idempotent: the first call wins and later calls do nothing, so tests
/// call it freely.
///
/// Stderr lines are JSON (`FINESETTLE_LOG_FORMAT=pretty` for people), filtered by `RUST_LOG`
/// (default `info`); the same filter decides what is exported.
pub fn init() {
    // The OTLP exporter's HTTP client is built below and needs the TLS crypto provider.
    crate::tls::install_crypto_provider();
    INSTALLED.get_or_init(|| install(OtelConfig::from_env()));
}

/// Which signals [`init`] turned on (all off before it).
pub fn exporting() -> Exporting {
    INSTALLED.get().map(|installed| installed.exporting).unwrap_or_default()
}

/// Exports everything still buffered and stops the exporters. Call once, at the very end of
/// `main`; it blocks until the collector answered or the export timeout (10 s by default) passed.
/// A no-op when nothing is exported. Spans and events after it are only written to stderr.
pub fn shutdown() {
    if SHUT_DOWN.swap(true, Ordering::SeqCst) {
        return;
    }
    if let Some(installed) = INSTALLED.get() {
        installed.providers.shutdown();
    }
}

type Base = Layered<EnvFilter, Registry>;
type BoxedLayer = Box<dyn Layer<Base> + Send + Sync>;

fn install(config: OtelConfig) -> Installed {
    let mut problems = config.problems.clone();
    let providers = Providers::build(&config, &mut problems);
    let exporting = Exporting {
        traces: providers.tracer.is_some(),
        metrics: providers.meter.is_some(),
        logs: providers.logger.is_some(),
    };

    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    let mut layers: Vec<BoxedLayer> = vec![stderr_layer()];
    if let Some(tracer_provider) = &providers.tracer {
        let tracer = tracer_provider.tracer("finesettle");
        layers.push(
            tracing_opentelemetry::layer()
                .with_tracer(tracer)
                .with_filter(filter::dynamic_filter_fn(|metadata, _| is_exported(metadata)))
                .boxed(),
        );
    }
    if let Some(logger_provider) = &providers.logger {
        layers.push(
            OpenTelemetryTracingBridge::new(logger_provider)
                .with_filter(filter::dynamic_filter_fn(|metadata, _| is_exported(metadata)))
                .boxed(),
        );
    }
    let installed = tracing_subscriber::registry()
        .with(filter)
        .with(layers)
        .try_init()
        .is_ok();
    if !installed {
        // Someone else installed a subscriber first (a test with its own): ours would see nothing.
        providers.shutdown();
        return Installed {
            providers: Providers::default(),
            exporting: Exporting::default(),
        };
    }
    if let Some(tracer_provider) = &providers.tracer {
        opentelemetry::global::set_tracer_provider(tracer_provider.clone());
    }
    if let Some(meter_provider) = &providers.meter {
        opentelemetry::global::set_meter_provider(meter_provider.clone());
    }
    metrics::install();

    for problem in &problems {
        problem.log();
    }
    if exporting != Exporting::default() {
        tracing::info!(
            otel.traces = config.traces.as_deref().filter(|_| exporting.traces),
            otel.metrics = config.metrics.as_deref().filter(|_| exporting.metrics),
            otel.logs = config.logs.as_deref().filter(|_| exporting.logs),
            "exporting telemetry over otlp"
        );
    }
    Installed { providers, exporting }
}

/// `RUST_LOG` when unset. OpenTelemetry's own diagnostics only from warnings up: its info lines
/// (provider installed, exporter built) are noise to an operator, its export failures are not.
const DEFAULT_FILTER: &str = "info,sqlx=warn,tower_http=info,opentelemetry=warn";

/// JSON lines on stderr, or human-readable lines with `FINESETTLE_LOG_FORMAT=pretty`.
fn stderr_layer() -> BoxedLayer {
    let pretty = std::env::var("FINESETTLE_LOG_FORMAT").is_ok_and(|v| v == "pretty");
    if pretty {
        tracing_subscriber::fmt::layer().with_writer(std::io::stderr).boxed()
    } else {
        tracing_subscriber::fmt::layer()
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_writer(std::io::stderr)
            .boxed()
    }
}

/// What the OpenTelemetry layers receive. Never the exporters' own machinery (the SDK, its HTTP
/// client): exporting a record about sending a record would feed itself. Nothing after shutdown.
fn is_exported(metadata: &Metadata<'_>) -> bool {
    const EXPORTER_INTERNALS: [&str; 5] = ["opentelemetry", "reqwest", "hyper", "h2", "rustls"];
    !SHUT_DOWN.load(Ordering::Relaxed)
        && !EXPORTER_INTERNALS
            .iter()
            .any(|prefix| metadata.target().starts_with(prefix))
}

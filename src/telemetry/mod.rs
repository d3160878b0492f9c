//! Logging and tracing. `tracing` is the instrumentation API everywhere; this module decides
//! where it goes. Log rules are in docs/LOGGING.md.

use tracing_subscriber::EnvFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// Installs the global subscriber: JSON lines on stderr (`FINESETTLE_LOG_FORMAT=pretty` for
/// people), filtered by `RUST_LOG` (default `info`).
pub fn init() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn,tower_http=info"));
    let pretty = std::env::var("FINESETTLE_LOG_FORMAT").is_ok_and(|v| v == "pretty");
    let registry = tracing_subscriber::registry().with(filter);
    let result = if pretty {
        registry
            .with(tracing_subscriber::fmt::layer().with_writer(std::io::stderr))
            .try_init()
    } else {
        registry
            .with(
                tracing_subscriber::fmt::layer()
                    .json()
                    .flatten_event(true)
                    .with_current_span(true)
                    .with_writer(std::io::stderr),
            )
            .try_init()
    };
    // A second init (tests) keeps the first subscriber.
    let _ = result;
}

//! TLS for outgoing HTTPS (alert webhooks, OTLP export): rustls with the `ring` provider.
//!
//! reqwest's own `rustls` feature brings aws-lc-rs, which needs cmake and clang to build and
//! would make two crypto providers active at once (sqlx already uses ring). So reqwest is built
//! with `rustls-no-provider`, and every process installs ring as the default provider before it
//! builds its first HTTP client. Certificates are verified against the platform's trust store.

use std::sync::Once;

/// Installs ring as rustls' process-wide crypto provider. Idempotent; call it before building
/// any `reqwest::Client`.
pub fn install_crypto_provider() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // Err means a provider is installed already (by another library): that one is kept.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

//! Delivering alert notifications to `FINESETTLE_ALERT_WEBHOOK` from the `alert_delivery` outbox.
//!
//! # Once, as far as HTTP allows
//!
//! A notification row is written in the same transaction as the raise or resolve it announces,
//! so it exists exactly when the event does: a crash before the commit loses both, a crash after
//! it loses neither, and `unique (alert_id, event)` keeps a second one from being queued.
//!
//! Delivery runs on every replica. [`deliver_due`] claims due rows in one committed statement
//! (`for update skip locked`, so two replicas never claim the same row, and `next_attempt_at`
//! pushed a lease ahead, so nobody else takes it while this replica POSTs), then POSTs outside
//! any transaction, then records the outcome. A 2xx marks the row delivered; anything else
//! (error, timeout, non-2xx, redirect) records `last_error` and schedules a retry with
//! exponential backoff, capped, for as long as it takes.
//!
//! That makes delivery **at least once** at the HTTP level, and it cannot be better: if the
//! process dies (or the database is unreachable) after the receiver accepted the POST but before
//! `delivered_at` is committed, the lease expires and some replica POSTs again. No protocol
//! can close that window from the sender's side alone. So every POST of a notification carries
//! the same `Idempotency-Key` header — the row's id, a UUID fixed when the event happened — and a
//! receiver that remembers the keys it processed drops the rare duplicate, which makes the
//! effect exactly once. Receivers that cannot (a chat hook) may, rarely, show a message twice.
//!
//! The webhook URL may carry credentials (user info, a token in the path or query), so it is
//! never logged nor stored with errors: logs show only scheme, host and port.

use std::fmt;
use std::time::Duration;

use reqwest::Url;
use sqlx::PgPool;

use crate::backoff::Backoff;
use crate::store;
use crate::store::alerts::ClaimedDelivery;

/// Why a webhook URL was refused.
#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    #[error("FINESETTLE_ALERT_WEBHOOK is not a valid URL ({0})")]
    InvalidUrl(String),
    #[error("FINESETTLE_ALERT_WEBHOOK must be an http or https URL with a host")]
    UnsupportedUrl,
    #[error("could not build the webhook HTTP client: {0}")]
    Client(reqwest::Error),
}

/// Where notifications go, and the client that sends them.
#[derive(Clone)]
pub struct Webhook {
    url: Url,
    /// Scheme, host and port only: safe to log.
    shown: String,
    client: reqwest::Client,
}

impl Webhook {
    /// Parses `url` and builds a client whose requests give up after `request_timeout`.
    pub fn new(url: &str, request_timeout: Duration) -> Result<Self, WebhookError> {
        let url = Url::parse(url).map_err(|e| WebhookError::InvalidUrl(e.to_string()))?;
        let host = url.host_str().ok_or(WebhookError::UnsupportedUrl)?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(WebhookError::UnsupportedUrl);
        }
        let shown = match url.port() {
            Some(port) => format!("{}://{host}:{port}", url.scheme()),
            None => format!("{}://{host}", url.scheme()),
        };
        crate::tls::install_crypto_provider();
        let client = reqwest::Client::builder()
            .timeout(request_timeout)
            .connect_timeout(request_timeout)
            // A redirected POST may turn into a GET: treat a 3xx as a failure to fix, not success.
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("finesettle/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(WebhookError::Client)?;
        Ok(Webhook { url, shown, client })
    }

    /// The URL without anything secret (user info, path, query).
    pub fn redacted(&self) -> &str {
        &self.shown
    }

    /// POSTs one notification; `Err` says why it was not accepted, without the URL.
    async fn post(&self, delivery: &ClaimedDelivery) -> Result<u16, String> {
        let response = self
            .client
            .post(self.url.clone())
            .header("idempotency-key", delivery.id.to_string())
            .json(&delivery.payload)
            .send()
            .await
            .map_err(describe)?;
        let status = response.status();
        if status.is_success() {
            Ok(status.as_u16())
        } else {
            Err(format!("the receiver answered HTTP {status}"))
        }
    }
}

impl fmt::Debug for Webhook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Webhook")
            .field("url", &self.shown)
            .finish_non_exhaustive()
    }
}

/// A reqwest error and its causes, with the URL (and so any credentials in it) left out.
fn describe(error: reqwest::Error) -> String {
    let error = error.without_url();
    let mut text = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// How the outbox is worked through.
#[derive(Debug, Clone)]
pub struct DeliveryPolicy {
    /// Rows claimed per [`deliver_due`] call; they are POSTed one after the other.
    pub batch_size: i64,
    /// How long a claim keeps other workers away. Must exceed `batch_size` × the request
    /// timeout, or a slow batch could be claimed (and POSTed) twice.
    pub lease: Duration,
    /// Wait after the first failure, doubling with each further failure up to its max.
    pub backoff: Backoff,
}

impl DeliveryPolicy {
    /// The request timeout [`DeliveryPolicy::default`]'s lease is sized for.
    pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
}

impl Default for DeliveryPolicy {
    fn default() -> Self {
        DeliveryPolicy {
            batch_size: 10,
            // 10 × 10 s of POSTs, plus room for the database round trips.
            lease: Duration::from_secs(5 * 60),
            backoff: Backoff::new(Duration::from_secs(10), Duration::from_secs(30 * 60)),
        }
    }
}

/// What one [`deliver_due`] call did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeliveryReport {
    pub delivered: usize,
    pub failed: usize,
}

/// A tracing event at `$level` about one attempt at `$delivery` (a `ClaimedDelivery`): the
/// fields that identify it, then `$fields` and the message. Both outcomes carry the same
/// identifying fields, so a delivery's attempts can be followed in the logs.
macro_rules! delivery_event {
    ($level:ident, $delivery:ident, $($fields:tt)+) => {
        tracing::$level!(
            delivery.id = %$delivery.id,
            alert.id = $delivery.alert_id,
            alert.event = %$delivery.event,
            delivery.attempts = $delivery.attempts,
            $($fields)+
        )
    };
}

/// Claims the due notifications and POSTs each once; see the module docs for the guarantees.
/// A `resolved` notification waits until its alert's `raised` one is delivered.
pub async fn deliver_due(pool: &PgPool, webhook: &Webhook, policy: &DeliveryPolicy) -> sqlx::Result<DeliveryReport> {
    let claimed = store::alerts::claim_due_deliveries(pool, policy.batch_size, policy.lease.as_secs_f64()).await?;
    let mut report = DeliveryReport::default();
    for delivery in claimed {
        match webhook.post(&delivery).await {
            Ok(status) => {
                store::alerts::mark_delivered(pool, delivery.id).await?;
                report.delivered += 1;
                delivery_event!(
                    info,
                    delivery,
                    http.status_code = status,
                    "alert notification delivered"
                );
            }
            Err(error) => {
                let retry_in = policy.backoff.after(u32::try_from(delivery.attempts).unwrap_or(0));
                store::alerts::mark_failed(pool, delivery.id, retry_in.as_secs_f64(), &error).await?;
                report.failed += 1;
                delivery_event!(
                    warn,
                    delivery,
                    retry_in_ms = u64::try_from(retry_in.as_millis()).unwrap_or(u64::MAX),
                    webhook.target = %webhook.redacted(),
                    error = %error,
                    "alert notification not delivered; will retry"
                );
            }
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_url_is_shown_without_secrets() {
        let w = Webhook::new(
            "https://user:s3cret@hooks.example.org:8443/services/T0/B0/tok3n?key=k3y",
            Duration::from_secs(5),
        )
        .unwrap();
        assert_eq!(w.redacted(), "https://hooks.example.org:8443");
        let debug = format!("{w:?}");
        for secret in ["s3cret", "tok3n", "k3y", "user"] {
            assert!(!debug.contains(secret), "{debug}");
        }
        assert!(Webhook::new("ftp://example.org/x", Duration::from_secs(5)).is_err());
        assert!(Webhook::new("not a url", Duration::from_secs(5)).is_err());
        assert!(Webhook::new("unix:/run/hook.sock", Duration::from_secs(5)).is_err());
    }

    #[test]
    fn the_default_lease_outlasts_a_batch() {
        let p = DeliveryPolicy::default();
        let batch = u32::try_from(p.batch_size).unwrap();
        assert!(p.lease > DeliveryPolicy::REQUEST_TIMEOUT * batch);
    }
}

//! Whether a client reaches a writable primary through the proxy, sampled ten times a second:
//! what "seconds without a primary" means to the service, whatever Patroni or HAProxy think.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use sqlx::{Connection, PgConnection};
use tokio::task::JoinHandle;
use tokio::time::Instant;

const EVERY: Duration = Duration::from_millis(100);
/// A probe that takes longer counts as a failure: a client would have timed out too.
const PATIENCE: Duration = Duration::from_secs(1);

/// The time without a primary: from the last probe that reached one before the outage to the
/// first that did after it.
#[derive(Debug, Clone, Copy)]
pub struct Outage {
    pub lost: Instant,
    /// The first probe that found no primary: a write sent after it cannot have reached the old
    /// primary (one sent between `lost` and this may have).
    pub noticed: Instant,
    pub back: Instant,
}

impl Outage {
    pub fn duration(&self) -> Duration {
        self.back - self.lost
    }
}

/// Samples, in the background, whether a fresh connection through the proxy lands on a primary
/// (`not pg_is_in_recovery()`). Stops when dropped.
pub struct PrimaryWatch {
    samples: Arc<Mutex<Vec<(Instant, bool)>>>,
    task: JoinHandle<()>,
}

impl PrimaryWatch {
    pub fn start(url: String) -> Self {
        let samples = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&samples);
        let task = tokio::spawn(async move {
            loop {
                let at = Instant::now();
                let primary = tokio::time::timeout(PATIENCE, on_a_primary(&url))
                    .await
                    .unwrap_or(false);
                sink.lock().unwrap().push((at, primary));
                tokio::time::sleep_until(at + EVERY).await;
            }
        });
        PrimaryWatch { samples, task }
    }

    /// The longest run of probes without a primary that began after `since` (a fault), once a
    /// probe reached a primary again; `None` while it has not, or if there was no outage.
    pub fn outage_after(&self, since: Instant) -> Option<Outage> {
        let samples = self.samples.lock().unwrap();
        let mut last_ok = None;
        let mut longest: Option<Outage> = None;
        let mut failing_since = None;
        for &(at, primary) in samples.iter() {
            if primary {
                if let (Some(lost), Some(noticed)) = (last_ok, failing_since) {
                    let outage = Outage {
                        lost,
                        noticed,
                        back: at,
                    };
                    if longest.is_none_or(|l| outage.duration() > l.duration()) {
                        longest = Some(outage);
                    }
                }
                failing_since = None;
                last_ok = Some(at);
            } else if at >= since && failing_since.is_none() {
                failing_since = Some(at);
            }
        }
        longest
    }
}

impl Drop for PrimaryWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn on_a_primary(url: &str) -> bool {
    let Ok(mut connection) = PgConnection::connect(url).await else {
        return false;
    };
    let recovering: Result<bool, _> = sqlx::query_scalar("select pg_is_in_recovery()")
        .fetch_one(&mut connection)
        .await;
    let _ = connection.close().await;
    matches!(recovering, Ok(false))
}

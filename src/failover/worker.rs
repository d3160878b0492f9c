//! The loop every replica runs while it serves: the failover check once a minute (with the alert
//! evaluation's pace) and whenever a new connection met another database identity, and the
//! replication gauge.

use std::time::Duration;

use sqlx::PgPool;
use tokio_util::sync::CancellationToken;

use super::{FailoverRules, FailoverWatch, check, resolve_resettled};
use crate::domain::failover::Replication;
use crate::store;
use crate::ticks::Ticks;

/// How often the identity is checked without a reconnect to prompt it: the alert evaluation's
/// minute (CONTRACT §3.1).
pub const CHECK_EVERY: Duration = Duration::from_secs(60);

/// Checks until `stop` is cancelled. Never stops on an error: each failed step is logged and the
/// next tick, or reconnect, tries again.
pub async fn run_failover_watch(pool: PgPool, watch: FailoverWatch, rules: FailoverRules, stop: CancellationToken) {
    let mut ticks = Ticks::new(CHECK_EVERY, &stop);
    loop {
        tokio::select! {
            more = ticks.next() => if !more { break },
            () = watch.changed() => {}
        }
        if let Err(error) = check(&pool, &watch, &rules).await {
            tracing::error!(error = format!("{error:#}"), "failover check failed");
        }
        if let Err(error) = resolve_resettled(&pool, &rules).await {
            tracing::error!(error = format!("{error:#}"), "could not resolve failover alerts");
        }
        report_replication(&pool).await;
    }
}

/// Reads the primary's replication and moves its gauge; `None` (logged) when it cannot be read.
pub async fn report_replication(pool: &PgPool) -> Option<Replication> {
    match store::replication::read(pool).await {
        Ok(replication) => {
            crate::telemetry::metrics::replication(replication.as_str());
            Some(replication)
        }
        Err(error) => {
            tracing::warn!(%error, "could not read the database's replication");
            None
        }
    }
}

/// At start: reads the replication and warns when the primary has no synchronous standby,
/// since a failover can then lose writes it acknowledged.
pub async fn warn_without_synchronous_standby(pool: &PgPool) {
    match report_replication(pool).await {
        Some(Replication::Synchronous) | None => {}
        Some(replication) => tracing::warn!(
            database.replication = replication.as_str(),
            "the database has no synchronous standby: writes it acknowledges can be lost by a failover"
        ),
    }
}

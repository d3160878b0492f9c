//! Raising and resolving alerts: the row, its webhook notification in the same transaction, and
//! the one log event after the commit. Shared by the minute-by-minute evaluation
//! ([`super::evaluate_at`]) and the audit (`crate::audit`), so that every alert, whoever raises
//! it, reaches people the same way.

use chrono::NaiveDate;
use sqlx::PgPool;

use super::{Alert, AlertEvent, Notification};
use crate::domain::TaskName;
use crate::domain::alert::{AlertKind, NewAlert};
use crate::store;

/// Where alerts of one task go.
#[derive(Debug, Clone, Copy)]
pub struct Publisher<'a> {
    pub pool: &'a PgPool,
    pub task_name: &'a TaskName,
    /// Queue a webhook notification with every raise and resolve (`FINESETTLE_ALERT_WEBHOOK`).
    pub webhook_enabled: bool,
}

impl Publisher<'_> {
    /// Inserts the alert and, in the same transaction, its webhook notification, then announces
    /// it. `None` when the alert exists already (raised earlier, or by another replica just now).
    pub async fn raise(&self, candidate: &NewAlert) -> anyhow::Result<Option<Alert>> {
        let mut tx = self.pool.begin().await?;
        let Some(alert) = store::alerts::raise(&mut *tx, self.task_name, candidate).await? else {
            return Ok(None);
        };
        if self.webhook_enabled {
            enqueue(&mut tx, &alert, AlertEvent::Raised).await?;
        }
        tx.commit().await?;
        announce(&alert, AlertEvent::Raised);
        Ok(Some(alert))
    }

    /// Resolves the alerts whose cause is gone (see `store::alerts::resolve_gone`), with their
    /// notifications, in one transaction, then announces each.
    pub async fn resolve_gone(&self) -> anyhow::Result<Vec<Alert>> {
        let mut tx = self.pool.begin().await?;
        let resolved = store::alerts::resolve_gone(&mut *tx, self.task_name).await?;
        self.enqueue_resolved(&mut tx, &resolved).await?;
        tx.commit().await?;
        for alert in &resolved {
            announce(alert, AlertEvent::Resolved);
        }
        Ok(resolved)
    }

    /// Resolves the active alert of `kind` for `business_date`, if there is one, with its
    /// notification, and announces it.
    pub async fn resolve(&self, kind: AlertKind, business_date: NaiveDate) -> anyhow::Result<Option<Alert>> {
        let mut tx = self.pool.begin().await?;
        let resolved = store::alerts::resolve_active(&mut *tx, kind, self.task_name, business_date).await?;
        self.enqueue_resolved(&mut tx, resolved.as_slice()).await?;
        tx.commit().await?;
        if let Some(alert) = &resolved {
            announce(alert, AlertEvent::Resolved);
        }
        Ok(resolved)
    }

    async fn enqueue_resolved(&self, tx: &mut sqlx::PgConnection, resolved: &[Alert]) -> anyhow::Result<()> {
        if self.webhook_enabled {
            for alert in resolved {
                enqueue(tx, alert, AlertEvent::Resolved).await?;
            }
        }
        Ok(())
    }
}

async fn enqueue(tx: &mut sqlx::PgConnection, alert: &Alert, event: AlertEvent) -> anyhow::Result<()> {
    let payload = serde_json::to_value(Notification {
        event,
        alert: alert.clone(),
    })?;
    store::alerts::enqueue_delivery(tx, alert.id, event.as_str(), &payload).await?;
    Ok(())
}

/// The one log event per raise or resolve, emitted after the commit by the replica that won it.
/// Dotted fields, so a log exporter (OpenTelemetry's tracing bridge) maps them to attributes.
fn announce(alert: &Alert, event: AlertEvent) {
    macro_rules! alert_event {
        ($level:expr, $message:literal) => {
            tracing::event!(
                target: "finesettle::alerts",
                $level,
                alert.id = alert.id,
                alert.kind = alert.kind.as_str(),
                alert.task_name = %alert.task_name,
                alert.business_date = %alert.business_date,
                alert.detail = %alert.detail,
                $message
            )
        };
    }
    match event {
        // An alert is a call to act: error, per docs/LOGGING.md.
        AlertEvent::Raised => alert_event!(tracing::Level::ERROR, "alert raised"),
        AlertEvent::Resolved => alert_event!(tracing::Level::INFO, "alert resolved"),
    }
}

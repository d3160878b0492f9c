//! Execution alerts (CONTRACT §3): noticing a date that failed, a run that is stuck, a date that
//! never ran and a replica whose clock is off — once, however many replicas look — and telling
//! people.
//!
//! Every replica runs the same loop ([`run_alert_worker`]): each minute it evaluates the rules in
//! [`conditions`] against the execution records, the start date, the schedule's own slots and the
//! replicas' clock measurements ([`evaluate_once`]), raising an alert per `(kind, task_name, business_date)` at most once (a
//! unique constraint decides which replica's insert wins) and resolving alerts whose cause is
//! gone. The replica that wins a raise or a resolve, and only that one:
//!
//! - emits a `tracing` event (target `finesettle::alerts`, message `alert raised` or
//!   `alert resolved`, fields `alert.id`, `alert.kind`, `alert.task_name`, `alert.business_date`,
//!   `alert.detail`), which a log exporter forwards like any other event;
//! - when `FINESETTLE_ALERT_WEBHOOK` is set, queues a notification in the `alert_delivery`
//!   outbox in the same transaction, which [`webhook::deliver_due`] POSTs until it is accepted.
//!
//! The audit (`crate::audit`) raises and resolves its `AUDIT` alerts through the same
//! [`Publisher`]; the evaluation leaves those alone.

pub mod conditions;
mod evaluate;
mod publish;
pub mod webhook;
mod worker;

use serde::{Deserialize, Serialize};

pub use crate::domain::alert::{Alert, AlertKind, AlertState, NewAlert, UnknownName};
pub use evaluate::{
    AlertRules, CLOCK_MEASUREMENT_STALE_AFTER, DEFAULT_MAX_MISSED_PER_EVALUATION, EvaluationReport, evaluate_at,
    evaluate_once,
};
pub use publish::Publisher;
pub use webhook::{DeliveryPolicy, DeliveryReport, Webhook, deliver_due};
pub use worker::{AlertWorkerConfig, run_alert_worker};

use crate::store;

/// The task the nightly settlement runs as (CONTRACT §2).
pub use crate::domain::SETTLE_FINES;

/// Records that `task_name` is deployed, unless a replica already did. A date whose slot came
/// before the first registration gets its MISSED grace from the registration instead: a service
/// cannot have missed a fire from before it ran. Idempotent; every replica calls it at start.
pub async fn register(pool: &sqlx::PgPool, task_name: &crate::domain::TaskName) -> sqlx::Result<()> {
    store::alerts::register_job(pool, task_name).await
}

/// What happened to an alert, as the webhook's `event` field and `alert_delivery.event` say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::IntoStaticStr)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum AlertEvent {
    Raised,
    Resolved,
}

impl AlertEvent {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// The webhook body: `{"event": "raised" | "resolved", "alert": {...}}` (CONTRACT §3).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Notification {
    pub event: AlertEvent,
    pub alert: Alert,
}

//! The alert loops every replica runs: evaluate every minute, deliver notifications every few
//! seconds. Neither ever stops on an error: each failed step is logged once and the next tick
//! tries again, because the database being away for a minute is exactly when alerts matter next.

use std::time::Duration;

use sqlx::PgPool;
use tokio_util::sync::CancellationToken;

use super::webhook::{DeliveryPolicy, Webhook};
use super::{AlertRules, deliver_due, evaluate_once, register};
use crate::config::Settings;
use crate::domain::alert::AlertKind;
use crate::schedule::CronSchedule;
use crate::ticks::Ticks;

/// What [`run_alert_worker`] runs, and how often.
#[derive(Debug, Clone)]
pub struct AlertWorkerConfig {
    pub rules: AlertRules,
    /// `None`: no webhook configured; nothing is queued or sent.
    pub webhook: Option<Webhook>,
    /// CONTRACT §3: every minute.
    pub evaluate_every: Duration,
    /// How often the outbox is polled for due notifications.
    pub deliver_every: Duration,
    pub delivery: DeliveryPolicy,
}

impl AlertWorkerConfig {
    /// The worker watching the settlement job, whose schedule is `schedule`, as the settings
    /// describe it. Fails on a webhook URL that cannot work, so a misconfigured replica stops at
    /// start.
    pub fn for_settlement(schedule: &CronSchedule, settings: &Settings) -> anyhow::Result<Self> {
        let webhook = settings
            .alert_webhook
            .as_deref()
            .map(|url| Webhook::new(url, DeliveryPolicy::REQUEST_TIMEOUT))
            .transpose()?;
        Ok(AlertWorkerConfig {
            rules: AlertRules::for_settlement(schedule, settings),
            webhook,
            evaluate_every: Duration::from_secs(60),
            deliver_every: Duration::from_secs(5),
            delivery: DeliveryPolicy::default(),
        })
    }
}

/// Registers the task, then evaluates and delivers until `stop` is cancelled. A step in progress
/// when `stop` fires finishes first (each is a few short transactions).
pub async fn run_alert_worker(pool: PgPool, config: AlertWorkerConfig, stop: CancellationToken) {
    if let Some(webhook) = &config.webhook {
        tracing::info!(webhook.target = %webhook.redacted(), "alert webhook enabled");
    }
    let evaluation = evaluation_loop(&pool, &config, &stop);
    let delivery = async {
        if let Some(webhook) = &config.webhook {
            delivery_loop(&pool, webhook, &config, &stop).await;
        }
    };
    tokio::join!(evaluation, delivery);
}

async fn evaluation_loop(pool: &PgPool, config: &AlertWorkerConfig, stop: &CancellationToken) {
    let rules = &config.rules;
    let mut registered = false;
    let mut ticks = Ticks::new(config.evaluate_every, stop);
    while ticks.next().await {
        if !registered {
            match register(pool, &rules.task_name).await {
                Ok(()) => registered = true,
                Err(error) => {
                    tracing::error!(job.task_name = %rules.task_name, error = %error, "could not register the job for alerts");
                    continue;
                }
            }
        }
        if let Err(error) = evaluate_once(pool, rules).await {
            tracing::error!(job.task_name = %rules.task_name, error = format!("{error:#}"), "alert evaluation failed");
        }
        report_active_alerts(pool).await;
    }
}

async fn delivery_loop(pool: &PgPool, webhook: &Webhook, config: &AlertWorkerConfig, stop: &CancellationToken) {
    let mut ticks = Ticks::new(config.deliver_every, stop);
    while ticks.next().await {
        // Keep going while whole batches come back: a backlog drains without waiting for ticks.
        loop {
            match deliver_due(pool, webhook, &config.delivery).await {
                Ok(report)
                    if report.delivered + report.failed >= batch_len(&config.delivery) && !stop.is_cancelled() => {}
                Ok(_) => break,
                Err(error) => {
                    tracing::error!(error = %error, "alert notification delivery failed");
                    break;
                }
            }
        }
    }
}

fn batch_len(policy: &DeliveryPolicy) -> usize {
    usize::try_from(policy.batch_size).unwrap_or(usize::MAX).max(1)
}

/// Moves the active-alert gauge of every kind (0 for kinds with none active).
async fn report_active_alerts(pool: &PgPool) {
    match crate::store::alerts::count_active_by_kind(pool).await {
        Ok(counts) => {
            for kind in AlertKind::ALL {
                let active = counts.iter().find(|(k, _)| *k == kind).map_or(0, |(_, n)| *n);
                crate::telemetry::metrics::alerts_active(kind.as_str(), active);
            }
        }
        Err(error) => tracing::warn!(%error, "could not count active alerts"),
    }
}

//! One evaluation: raise what the rules say, resolve what no longer holds, announce each once.

use std::collections::HashMap;
use std::time::Duration;

use chrono::{DateTime, NaiveDate, Utc};
use sqlx::PgPool;

use super::Alert;
use super::conditions::{self, ExpectationBounds, NewAlert};
use super::publish::Publisher;
use crate::config::Settings;
use crate::schedule::{CronSchedule, ScheduleError};
use crate::store;

/// How many of the latest slots MISSED looks back over: two months of a nightly job, the same
/// reach as one fire's backfill (`FINESETTLE_BACKFILL_MAX_DAYS` defaults to 62).
pub const DEFAULT_LOOKBACK_SLOTS: usize = 62;

/// Everything an evaluation needs to know about one task.
#[derive(Debug, Clone)]
pub struct AlertRules {
    pub task_name: String,
    /// The task's cron in the business zone: its slots are the dates MISSED expects.
    pub schedule: CronSchedule,
    pub job_timeout: Duration,
    pub missed_grace: Duration,
    pub settle_start_date: Option<NaiveDate>,
    pub lookback_slots: usize,
    /// Queue a webhook notification with every raise and resolve.
    pub webhook_enabled: bool,
}

impl AlertRules {
    /// The rules for `settle-fines` from the service settings.
    pub fn from_settings(settings: &Settings) -> Result<Self, ScheduleError> {
        Ok(AlertRules {
            task_name: super::SETTLE_FINES.to_owned(),
            schedule: CronSchedule::parse(&settings.job.settle_cron, settings.business_tz)?,
            job_timeout: settings.job.job_timeout,
            missed_grace: settings.job.missed_grace,
            settle_start_date: settings.job.settle_start_date,
            lookback_slots: DEFAULT_LOOKBACK_SLOTS,
            webhook_enabled: settings.alert_webhook.is_some(),
        })
    }
}

/// The alerts this evaluation raised and resolved; a replica that lost a race sees none of them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EvaluationReport {
    pub raised: Vec<Alert>,
    pub resolved: Vec<Alert>,
}

/// Evaluates the rules as of the database clock's `now()`.
pub async fn evaluate_once(pool: &PgPool, rules: &AlertRules) -> anyhow::Result<EvaluationReport> {
    let at = store::clock::now(pool).await?;
    evaluate_at(pool, rules, at).await
}

/// Evaluates the rules as of `at`: raises every alert whose condition holds and that was never
/// raised, then resolves every active alert whose cause is gone. Each raise and each resolve
/// commits on its own with its outbox row, so one bad alert cannot hold back the others.
///
/// Safe to run on any number of replicas at once: the unique `(kind, task_name, business_date)`
/// lets exactly one insert win, and resolution skips rows another replica has locked.
pub async fn evaluate_at(pool: &PgPool, rules: &AlertRules, at: DateTime<Utc>) -> anyhow::Result<EvaluationReport> {
    let task = rules.task_name.as_str();
    let mut candidates: Vec<NewAlert> = store::alerts::failed_without_success(pool, task)
        .await?
        .into_iter()
        .map(|f| conditions::failed(f.id, f.business_date, f.error.as_deref()))
        .collect();
    let cutoff = conditions::timeout_cutoff(at, rules.job_timeout);
    candidates.extend(
        store::alerts::running_since_before(pool, task, cutoff)
            .await?
            .into_iter()
            .map(|r| conditions::timed_out(r.id, r.business_date, r.started_at, rules.job_timeout)),
    );
    candidates.extend(missed(pool, rules, at).await?);

    let publisher = Publisher {
        pool,
        task_name: task,
        webhook_enabled: rules.webhook_enabled,
    };
    let mut report = EvaluationReport::default();
    for candidate in &candidates {
        if let Some(alert) = publisher.raise(candidate).await? {
            report.raised.push(alert);
        }
    }
    report.resolved = publisher.resolve_gone().await?;
    Ok(report)
}

/// MISSED candidates: expected dates past their deadline with no SUCCESS and no alert yet.
async fn missed(pool: &PgPool, rules: &AlertRules, at: DateTime<Utc>) -> anyhow::Result<Vec<NewAlert>> {
    // Not registered yet (the worker registers before its first evaluation): nothing is expected.
    let Some(first_seen_at) = store::alerts::first_seen_at(pool, &rules.task_name).await? else {
        return Ok(Vec::new());
    };
    let bounds = ExpectationBounds {
        grace: rules.missed_grace,
        first_seen_at,
        start_date: rules.settle_start_date,
        max_slots: rules.lookback_slots,
    };
    let expected = conditions::expected_dates(&rules.schedule, at, &bounds);
    if expected.is_empty() {
        return Ok(Vec::new());
    }
    let dates: Vec<NaiveDate> = expected.iter().map(|e| e.business_date).collect();
    let records: HashMap<NaiveDate, store::alerts::DateRecord> =
        store::alerts::date_records(pool, &rules.task_name, &dates)
            .await?
            .into_iter()
            .map(|r| (r.business_date, r))
            .collect();
    Ok(expected
        .iter()
        .filter_map(|e| {
            let record = records.get(&e.business_date)?;
            (!record.succeeded && !record.alerted).then(|| conditions::missed(e, rules.missed_grace, record.attempts))
        })
        .collect())
}

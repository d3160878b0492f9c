//! One evaluation: raise what the rules say, resolve what no longer holds, announce each once.

use std::time::Duration;

use chrono::{DateTime, NaiveDate, Utc};
use sqlx::PgPool;

use super::Alert;
use super::conditions::{self, ClockSkewLimits, Expectation};
use super::publish::Publisher;
use crate::config::Settings;
use crate::domain::alert::{AlertKind, NewAlert};
use crate::domain::{SETTLE_FINES, TaskName};
use crate::schedule::CronSchedule;
use crate::store;
use crate::telemetry::CLOCK_SKEW_PROBE_INTERVAL;

/// How many MISSED alerts one evaluation raises at most, oldest dates first; the rest follow on
/// the next evaluations, a minute apart. Every date from the start date on is expected, so a
/// service that cannot settle (or an old start date the catch-up is still working through)
/// could otherwise raise years of dates in one evaluation: one transaction, one log event and
/// one webhook POST each. A hundred keeps an evaluation to a few seconds at worst.
pub const DEFAULT_MAX_MISSED_PER_EVALUATION: usize = 100;

/// How old a replica's clock measurement may be and still count for CLOCK_SKEW: three probe
/// intervals, so that a measurement or two lost to a database blip neither resolves the alert
/// nor hides the replica, while a replica that died skewed stops counting within minutes.
pub const CLOCK_MEASUREMENT_STALE_AFTER: Duration = CLOCK_SKEW_PROBE_INTERVAL.saturating_mul(3);

/// Everything an evaluation needs to know about one task.
#[derive(Debug, Clone)]
pub struct AlertRules {
    pub task_name: TaskName,
    /// The task's cron in the business zone: its slots are the dates MISSED expects.
    pub schedule: CronSchedule,
    pub job_timeout: Duration,
    pub missed_grace: Duration,
    /// `FINESETTLE_SETTLE_START_DATE`; when unset, the start date the job recorded is used.
    pub settle_start_date: Option<NaiveDate>,
    /// See [`DEFAULT_MAX_MISSED_PER_EVALUATION`].
    pub max_missed_per_evaluation: usize,
    /// CLOCK_SKEW: `FINESETTLE_MAX_CLOCK_SKEW`, and [`CLOCK_MEASUREMENT_STALE_AFTER`].
    pub clock_skew: ClockSkewLimits,
    /// Queue a webhook notification with every raise and resolve.
    pub webhook_enabled: bool,
}

impl AlertRules {
    /// The rules for the settlement job, given the schedule the job already parsed, so the slots
    /// MISSED expects are exactly the ones its ticker fires.
    pub fn for_settlement(schedule: &CronSchedule, settings: &Settings) -> Self {
        AlertRules {
            task_name: SETTLE_FINES,
            schedule: schedule.clone(),
            job_timeout: settings.job.job_timeout,
            missed_grace: settings.job.missed_grace,
            settle_start_date: settings.job.settle_start_date,
            max_missed_per_evaluation: DEFAULT_MAX_MISSED_PER_EVALUATION,
            clock_skew: ClockSkewLimits {
                max_skew: settings.max_clock_skew,
                stale_after: CLOCK_MEASUREMENT_STALE_AFTER,
            },
            webhook_enabled: settings.alert_webhook.is_some(),
        }
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
    let task = &rules.task_name;
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
    let (skew_raise, skew_resolve) = clock_skew(pool, rules, at).await?;
    candidates.extend(skew_raise);

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
    for business_date in skew_resolve {
        report
            .resolved
            .extend(publisher.resolve(AlertKind::ClockSkew, business_date).await?);
    }
    Ok(report)
}

/// What CLOCK_SKEW asks of this evaluation: a raise when a replica's clock is off and no
/// CLOCK_SKEW alert is active (one alert for as long as clocks stay off, however many dates that
/// spans), or the dates of the active ones to resolve when no clock is off.
async fn clock_skew(
    pool: &PgPool,
    rules: &AlertRules,
    at: DateTime<Utc>,
) -> anyhow::Result<(Option<NewAlert>, Vec<NaiveDate>)> {
    let measurements = store::replica_clocks::latest(pool).await?;
    let skewed = conditions::clock_skew(&measurements, at, rules.schedule.tz(), &rules.clock_skew);
    let active = store::alerts::active_dates(pool, AlertKind::ClockSkew, &rules.task_name).await?;
    Ok(match skewed {
        Some(alert) => (active.is_empty().then_some(alert), Vec::new()),
        None => (None, active),
    })
}

/// MISSED candidates: expected dates past their deadline with no SUCCESS and no alert yet,
/// oldest first, at most `max_missed_per_evaluation`.
async fn missed(pool: &PgPool, rules: &AlertRules, at: DateTime<Utc>) -> anyhow::Result<Vec<NewAlert>> {
    // Not registered by a service yet (the worker registers before its first evaluation; a row
    // the planner wrote from a command has no instant): nothing is expected.
    let Some(store::alerts::Registration {
        first_seen_at: Some(first_seen_at),
        start_date: recorded_start,
    }) = store::alerts::registration(pool, &rules.task_name).await?
    else {
        return Ok(Vec::new());
    };
    let expectation = Expectation {
        grace: rules.missed_grace,
        first_seen_at,
        start_date: rules.settle_start_date.or(recorded_start),
    };
    let Some(range) = conditions::expected_range(&rules.schedule, at, &expectation) else {
        return Ok(Vec::new());
    };
    let limit = i64::try_from(rules.max_missed_per_evaluation).unwrap_or(i64::MAX);
    let unsettled = store::alerts::unalerted_unsettled(pool, &rules.task_name, range.first, range.last, limit).await?;
    Ok(unsettled
        .iter()
        .filter_map(|u| {
            let expected = conditions::expected_date(&rules.schedule, u.business_date, &expectation)?;
            (expected.deadline <= at).then(|| conditions::missed(&expected, rules.missed_grace, u.attempts))
        })
        .collect())
}

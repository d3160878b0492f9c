//! One check of the database's identity against this replica's memory, and the resolution of
//! `DATABASE_FAILOVER` alerts.

use chrono::NaiveDate;
use chrono_tz::Tz;
use sqlx::PgPool;

use super::FailoverWatch;
use crate::alerts::{Alert, Publisher};
use crate::audit::{AuditConfig, AuditError, audit_month};
use crate::config::Settings;
use crate::domain::alert::AlertKind;
use crate::domain::failover::{Change, DatabaseIdentity, Failover, MonthAudit, PrimaryHolds, months_touched};
use crate::domain::{TaskName, business_date, format_month};
use crate::store;

/// What a check needs besides the database and the memory.
#[derive(Debug, Clone)]
pub struct FailoverRules {
    pub task_name: TaskName,
    /// Recorded as the replica that first noticed a timeline.
    pub instance_id: String,
    /// The alert's business date is the first sighting's date in this zone.
    pub business_tz: Tz,
    /// `FINESETTLE_SETTLE_START_DATE`; unset, the recorded start date: where the dates a
    /// resolution waits for begin.
    pub settle_start_date: Option<NaiveDate>,
    /// How the touched months are audited (and where their AUDIT alerts go).
    pub audit: AuditConfig,
    pub webhook_enabled: bool,
}

impl FailoverRules {
    pub fn from_settings(settings: &Settings) -> Self {
        FailoverRules {
            task_name: crate::domain::SETTLE_FINES,
            instance_id: settings.instance_id.clone(),
            business_tz: settings.business_tz,
            settle_start_date: settings.job.settle_start_date,
            audit: AuditConfig::from_settings(settings),
            webhook_enabled: settings.alert_webhook.is_some(),
        }
    }

    fn publisher<'a>(&'a self, pool: &'a PgPool) -> Publisher<'a> {
        Publisher {
            pool,
            task_name: &self.task_name,
            webhook_enabled: self.webhook_enabled,
        }
    }
}

/// A failover this check noticed; `raised` is `None` when another replica raised the alert.
#[derive(Debug, Clone)]
pub struct Noticed {
    pub failover: Failover,
    pub raised: Option<Alert>,
}

/// Reads the database's identity and compares it with what `watch` remembers; on a new timeline,
/// logs it, audits the touched months and raises `DATABASE_FAILOVER` (once across replicas).
/// The first check only remembers. A node in recovery is not checked (nothing is written there).
/// The identity is remembered only once the failover is handled, so a check that failed midway
/// is repeated by the next one.
pub async fn check(pool: &PgPool, watch: &FailoverWatch, rules: &FailoverRules) -> anyhow::Result<Option<Noticed>> {
    let identity = {
        let mut conn = pool.acquire().await?;
        store::database_identity::read(&mut conn).await?
    };
    let Some(identity) = identity else {
        return Ok(None);
    };
    let Some(previous) = watch.identity() else {
        watch.remember(identity);
        return Ok(None);
    };
    match identity.change_from(&previous) {
        Change::Same => Ok(None),
        Change::OtherCluster => {
            tracing::warn!(
                database.previous_system_identifier = ?previous.system_identifier,
                database.system_identifier = ?identity.system_identifier,
                "the database is another cluster than before (a restore, another DATABASE_URL); not a failover"
            );
            watch.remember(identity);
            Ok(None)
        }
        Change::Failover { from, to } => {
            tracing::error!(
                database.previous_timeline = from,
                database.timeline = to,
                database.system_identifier = ?identity.system_identifier,
                "database failover: the primary writes on a new timeline; acknowledged writes may be lost"
            );
            let failover = assess(pool, watch, rules, &identity, from).await?;
            let raised = rules.publisher(pool).raise(&failover.alert()).await?;
            watch.remember(identity);
            Ok(Some(Noticed { failover, raised }))
        }
    }
}

/// What the failover from timeline `from` to `identity`'s may have cost, with the touched months
/// audited when final.
async fn assess(
    pool: &PgPool,
    watch: &FailoverWatch,
    rules: &FailoverRules,
    identity: &DatabaseIdentity,
    from: i64,
) -> anyhow::Result<Failover> {
    let first_seen_at = store::database_identity::first_seen(pool, identity, &rules.instance_id).await?;
    let holds = PrimaryHolds {
        fencing_token: store::database_identity::current_token(pool, &rules.task_name).await?,
        success: store::executions::last_success(pool, &rules.task_name).await?,
    };
    let seen = watch.acknowledged();
    let mut months = Vec::new();
    for month in months_touched(&seen, &holds) {
        months.push((month, audit(pool, rules, month).await));
    }
    Ok(Failover {
        first_seen_at,
        business_date: business_date(first_seen_at, rules.business_tz),
        from_timeline: from,
        to_timeline: identity.timeline,
        seen,
        holds,
        months,
    })
}

async fn audit(pool: &PgPool, rules: &FailoverRules, month: NaiveDate) -> MonthAudit {
    match audit_month(pool, &rules.audit, month).await {
        Ok(report) if report.differences_total == 0 => MonthAudit::Clean,
        Ok(report) => MonthAudit::Differences(report.differences_total),
        Err(AuditError::NotFinal(_)) => MonthAudit::NotFinal,
        Err(error) => {
            tracing::warn!(audit.month = %format_month(month), error = format!("{error:#}"), "audit after a failover failed");
            MonthAudit::Failed
        }
    }
}

/// Resolves each active `DATABASE_FAILOVER` alert once every date from the start date through
/// the day before it was first seen has a SUCCESS: the dates the promotion may have lost are
/// settled again (the job fills gaps at its next fire, and audits the months it makes final).
pub async fn resolve_resettled(pool: &PgPool, rules: &FailoverRules) -> anyhow::Result<Vec<Alert>> {
    let task = &rules.task_name;
    let active = store::alerts::active_dates(pool, AlertKind::DatabaseFailover, task).await?;
    if active.is_empty() {
        return Ok(Vec::new());
    }
    let start = match rules.settle_start_date {
        Some(start) => Some(start),
        None => store::start_date::recorded(pool, task).await?,
    };
    let mut resolved = Vec::new();
    for seen_on in active {
        let settled_again = match (start, seen_on.pred_opt()) {
            (Some(start), Some(last)) if start <= last => {
                store::executions::unsettled_between(pool, task, start, last, 1)
                    .await?
                    .is_empty()
            }
            // nothing was ever expected settled before the failover
            _ => true,
        };
        if settled_again {
            resolved.extend(
                rules
                    .publisher(pool)
                    .resolve(AlertKind::DatabaseFailover, seen_on)
                    .await?,
            );
        }
    }
    Ok(resolved)
}

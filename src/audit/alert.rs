//! The month's `AUDIT` alert: raised when an audit finds differences, resolved by a clean one.
//!
//! Its business date is the first day of the month, so the alert is raised once per month
//! (`alert_once`) however many replicas or operators audit it, and reaches people through the
//! same outbox and log event as every other alert. Corrections and loans pending accrual raise
//! nothing: they are not errors.

use std::collections::BTreeSet;

use chrono::NaiveDate;
use sqlx::PgPool;

use super::AuditConfig;
use crate::alerts::{Alert, AlertKind, AlertState, Publisher};
use crate::domain::alert::NewAlert;
use crate::domain::{LoanId, format_month};
use crate::store;

/// How many loan ids an alert's detail names; the rest are counted.
const NAMED_LOANS: usize = 20;

/// The month's alert after an audit, and what the audit did to it.
#[derive(Debug, Default)]
pub(super) struct AlertOutcome {
    pub alert: Option<Alert>,
    pub raised: bool,
    pub resolved: bool,
}

/// Raises the month's alert when `difference_loans` is not empty, resolves an active one when
/// it is, and answers the alert as it stands.
pub(super) async fn publish(
    pool: &PgPool,
    config: &AuditConfig,
    month: NaiveDate,
    differences: usize,
    difference_loans: &BTreeSet<LoanId>,
    corrections: usize,
) -> anyhow::Result<AlertOutcome> {
    let publisher = Publisher {
        pool,
        task_name: &config.task_name,
        webhook_enabled: config.webhook_enabled,
    };
    if differences > 0 {
        let candidate = NewAlert {
            kind: AlertKind::Audit,
            business_date: month,
            detail: detail(month, differences, difference_loans, corrections),
            execution_id: None,
        };
        if let Some(alert) = publisher.raise(&candidate).await? {
            return Ok(AlertOutcome {
                alert: Some(alert),
                raised: true,
                resolved: false,
            });
        }
    } else if let Some(alert) = publisher.resolve(AlertKind::Audit, month).await? {
        return Ok(AlertOutcome {
            alert: Some(alert),
            raised: false,
            resolved: true,
        });
    }
    // Raised (or resolved) before: report it as it stands.
    let existing = store::alerts::find(pool, AlertKind::Audit, &config.task_name, month).await?;
    if let Some(resolved) = existing
        .as_ref()
        .filter(|a| differences > 0 && a.state == AlertState::Resolved)
    {
        // One alert per kind and date: the month's was resolved by a clean audit and cannot be
        // raised again. Say so where people look, once per audit.
        tracing::error!(
            alert.id = resolved.id,
            audit.month = %format_month(month),
            audit.differences = differences,
            "audit found differences in a month whose AUDIT alert was already resolved; it is not raised again"
        );
    }
    Ok(AlertOutcome {
        alert: existing,
        ..AlertOutcome::default()
    })
}

/// `audit of 2026-03: 3 differences in loans 12, 15; 1 correction to review; ...`, naming at
/// most [`NAMED_LOANS`] loans, the lowest ids first.
pub(super) fn detail(month: NaiveDate, differences: usize, loans: &BTreeSet<LoanId>, corrections: usize) -> String {
    let mut named: Vec<String> = loans.iter().take(NAMED_LOANS).map(LoanId::to_string).collect();
    if loans.len() > NAMED_LOANS {
        named.push(format!("and {} more", loans.len() - NAMED_LOANS));
    }
    let plural = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let mut text = format!(
        "audit of {}: {} in {} {}",
        format_month(month),
        plural(differences, "difference", "differences"),
        if loans.len() == 1 { "loan" } else { "loans" },
        named.join(", ")
    );
    if corrections > 0 {
        text.push_str(&format!(
            "; {} to review",
            plural(corrections, "correction", "corrections")
        ));
    }
    text.push_str(&format!(
        "; `finesettle audit --month {}` lists them",
        format_month(month)
    ));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn march() -> NaiveDate {
        NaiveDate::from_ymd_opt(2026, 3, 1).unwrap()
    }

    #[test]
    fn the_detail_names_the_loans_lowest_first_and_counts_the_rest() {
        let loans: BTreeSet<LoanId> = [LoanId(15), LoanId(12)].into();
        assert_eq!(
            detail(march(), 3, &loans, 1),
            "audit of 2026-03: 3 differences in loans 12, 15; 1 correction to review; \
             `finesettle audit --month 2026-03` lists them"
        );
        let one: BTreeSet<LoanId> = [LoanId(7)].into();
        assert!(detail(march(), 1, &one, 0).starts_with("audit of 2026-03: 1 difference in loan 7; `finesettle"));
        let many: BTreeSet<LoanId> = (1..=25).map(LoanId).collect();
        let text = detail(march(), 25, &many, 0);
        assert!(text.contains("in loans 1, 2, 3,"), "{text}");
        assert!(text.contains("19, 20, and 5 more; "), "{text}");
        assert!(!text.contains(" 21,"), "{text}");
    }
}

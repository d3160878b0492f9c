//! The audit: every fine of an ended month recomputed from the loans and compared, with its
//! CHARGE and REVERSAL, with what is stored.
//!
//! The settlement is built so that nothing can go wrong; the audit assumes something did anyway
//! (a bug nobody thought of, a hand edit in psql, a restored backup missing a few rows) and
//! checks the result rather than the procedure. For one month:
//!
//! 1. **Only a final month.** The latest settled date must be on or after the month's last day,
//!    and every date of the month from the start date on must have its SUCCESS
//!    ([`crate::domain::audit::check_final`]); otherwise the fines are still the job's to write,
//!    and the audit refuses ([`AuditError::NotFinal`], HTTP 409 `month_not_final`).
//! 2. **Facts, then rules.** The loans that may owe a fine for the month or have one are read
//!    with their fine and its ledger entries by one streamed statement ([`store::audit::facts`])
//!    in a read-only repeatable-read transaction with the finality check, so the audit sees one
//!    instant of the database and writes nothing there. Each loan is judged by
//!    [`crate::domain::audit::audit_loan`], which recomputes the fine from §1 of docs/CONTRACT.md
//!    and sorts what differs into differences (errors), corrections (a loan changed after its
//!    fine was final) and pending accrual (a loan the next run will bring up to date).
//! 3. **An alert for people.** Any difference raises the month's `AUDIT` alert naming the loans
//!    ([`alert`]); a clean re-audit resolves it.
//!
//! It runs from `finesettle audit --month`, from `POST /api/v1/jobs/{name}/audits`, and after
//! every fire that made a month final ([`audit_finalised_months`]).

mod alert;
mod report;

use std::collections::BTreeSet;
use std::time::Instant;

use chrono::NaiveDate;
use futures_util::TryStreamExt;
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;

pub use report::{AuditFinding, AuditReport, MAX_LISTED};

use crate::config::Settings;
use crate::domain::audit::{LoanFacts, NotFinal, StoredFine, audit_loan, check_final};
use crate::domain::{FineStatus, LoanTerms, TaskName, format_month, month_end, month_start};
use crate::settlement::settle::NO_OVERDUE_DAYS;
use crate::store;
use crate::store::audit::FactRow;

/// What an audit needs to know besides the month.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditConfig {
    /// The job whose fines are audited, and the task its alerts belong to.
    pub task_name: TaskName,
    /// `FINESETTLE_SETTLE_START_DATE`; unset, the recorded start date is used.
    pub configured_start: Option<NaiveDate>,
    /// Queue a webhook notification with the alert (`FINESETTLE_ALERT_WEBHOOK` is set).
    pub webhook_enabled: bool,
}

impl AuditConfig {
    /// The audit of `settle-fines`, from the service settings.
    pub fn from_settings(settings: &Settings) -> Self {
        AuditConfig {
            task_name: crate::domain::SETTLE_FINES,
            configured_start: settings.job.settle_start_date,
            webhook_enabled: settings.alert_webhook.is_some(),
        }
    }
}

/// Why an audit gave no report.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// The month's fines are not all final yet.
    #[error(transparent)]
    NotFinal(#[from] NotFinal),
    #[error(transparent)]
    Db(#[from] sqlx::Error),
    /// A stored value this code does not know, or the alert could not be written.
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

/// Audits the month of `month` (any day of it); see the module docs.
pub async fn audit_month(pool: &PgPool, config: &AuditConfig, month: NaiveDate) -> Result<AuditReport, AuditError> {
    let started = Instant::now();
    let month = month_start(month);
    let last_day = month_end(month);
    let task = &config.task_name;

    // One snapshot for the finality check and the facts; the audit writes nothing here.
    let mut tx = pool
        .begin_with("begin isolation level repeatable read, read only")
        .await?;
    let settled = store::audit::settled_span(&mut *tx, task).await?;
    let recorded = match config.configured_start {
        Some(start) => Some(start),
        None => store::start_date::recorded(&mut *tx, task).await?,
    };
    // A database settled by a version that did not record its start date: months before the
    // first settled date were never accrued (CONTRACT §1).
    let Some(start_date) = recorded.or(settled.first) else {
        return Err(NotFinal::NothingSettled { month }.into());
    };
    let first_unsettled = if start_date <= last_day {
        store::executions::unsettled_between(&mut *tx, task, start_date.max(month), last_day, 1)
            .await?
            .first()
            .copied()
    } else {
        None
    };
    check_final(month, settled.last, first_unsettled)?;
    let settled_through = settled.last.unwrap_or(last_day);

    let mut tally = report::Tally::default();
    let mut facts = store::audit::facts(&mut tx, month, last_day);
    while let Some(row) = facts.try_next().await? {
        let loan = loan_facts(&row)?;
        tally.add(&loan, &audit_loan(&loan, month, start_date));
    }
    drop(facts);
    let tally = tally.sorted();
    tx.commit().await?;

    let outcome = alert::publish(
        pool,
        config,
        month,
        tally.differences.total,
        &tally.difference_loans,
        tally.corrections.total,
    )
    .await?;
    let report = AuditReport {
        task_name: config.task_name.clone(),
        month: format_month(month),
        settled_through,
        start_date,
        loans_checked: tally.loans_checked,
        fines_checked: tally.fines_checked,
        expected_cents: tally.expected_cents,
        settled_cents: tally.settled_cents,
        differences_total: tally.differences.total,
        differences: tally.differences.items,
        corrections_total: tally.corrections.total,
        corrections: tally.corrections.items,
        pending_accrual_total: tally.pending_accrual.total,
        pending_accrual: tally.pending_accrual.items,
        alert: outcome.alert,
        alert_raised: outcome.raised,
        alert_resolved: outcome.resolved,
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    };
    tracing::info!(
        job.task_name = %report.task_name,
        audit.month = %report.month,
        audit.loans_checked = report.loans_checked,
        audit.fines_checked = report.fines_checked,
        audit.differences = report.differences_total,
        audit.corrections = report.corrections_total,
        audit.pending_accrual = report.pending_accrual_total,
        duration_ms = report.duration_ms,
        "month audited"
    );
    Ok(report)
}

/// After a fire (the job's after-walk hook, `crate::jobs::Hooks`, wired at start-up): audits
/// every month the fire made final, that is the months of the `settled` dates that are final now (usually the month whose last day it settled; also an older
/// month whose gap it filled). Outside every date's transaction and after the lock is released,
/// so it delays no settlement; stopped when `stop` is cancelled (shutdown). Failures are logged
/// only: the audit can be run again by hand, and the settlement it checks has committed.
pub async fn audit_finalised_months(
    pool: &PgPool,
    config: &AuditConfig,
    settled: &[NaiveDate],
    stop: &CancellationToken,
) {
    let months: BTreeSet<NaiveDate> = settled.iter().map(|date| month_start(*date)).collect();
    for month in months {
        let audit = tokio::select! {
            audit = audit_month(pool, config, month) => audit,
            () = stop.cancelled() => return,
        };
        match audit {
            // The report logged itself; a difference raised the alert.
            Ok(_) => {}
            Err(AuditError::NotFinal(not_final)) => {
                tracing::debug!(audit.month = %format_month(month), reason = %not_final, "month not final; not audited");
            }
            Err(error) => {
                tracing::warn!(
                    audit.month = %format_month(month),
                    error = format!("{error:#}"),
                    "audit after the fire failed; run `finesettle audit` to retry"
                );
            }
        }
    }
}

/// A fetched row as the domain's facts.
fn loan_facts(row: &FactRow) -> anyhow::Result<LoanFacts> {
    let fine = match (row.fine_id, row.fine_status.as_deref()) {
        (Some(id), Some(status)) => Some(StoredFine {
            id,
            status: status.parse::<FineStatus>()?,
            overdue_days: row.overdue_days.unwrap_or_default(),
            amount_cents: row.amount_cents.unwrap_or_default(),
            settled_at: row.settled_at,
            voided_at: row.voided_at,
            voided_by_settlement: row.void_reason.as_deref() == Some(NO_OVERDUE_DAYS),
            charge_cents: row.charge_cents,
            reversal_cents: row.reversal_cents,
        }),
        _ => None,
    };
    Ok(LoanFacts {
        loan_id: row.loan_id,
        terms: LoanTerms {
            borrowed_on: row.borrowed_on,
            due_on: row.due_on,
            returned_on: row.returned_on,
            daily_fine_cents: row.daily_fine_cents,
        },
        updated_at: row.updated_at,
        queued: row.queued,
        fine,
    })
}

//! What an audit found, as the API answers it and the CLI prints it.

use std::collections::BTreeSet;
use std::fmt;

use chrono::{DateTime, NaiveDate, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use crate::alerts::Alert;
use crate::domain::LoanId;
use crate::domain::TaskName;
use crate::domain::audit::{Class, LoanFacts, Reason, Verdict};

/// How many findings each list of a report carries at most. The totals count them all; a month
/// with more than this many is broken in a way the listed ones already show.
pub const MAX_LISTED: usize = 1000;

/// The audit of one month.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AuditReport {
    #[schema(value_type = String)]
    pub task_name: TaskName,
    /// The audited month, `YYYY-MM`.
    #[schema(example = "2026-03")]
    pub month: String,
    /// The latest business date with a SUCCESS when the audit ran.
    pub settled_through: NaiveDate,
    /// The job's start date: no fine is owed for a month before its month.
    pub start_date: NaiveDate,
    /// Loans that could owe a fine for the month or have one.
    pub loans_checked: i64,
    /// Fines of the month (any status).
    pub fines_checked: i64,
    /// The sum of the fines recomputed from the loans.
    pub expected_cents: i64,
    /// The sum of the SETTLED fines' amounts.
    pub settled_cents: i64,
    /// Errors: fines or ledger entries that differ from the recomputation. Any raises the
    /// month's `AUDIT` alert.
    pub differences_total: usize,
    /// Up to 1000 of the differences, by loan id.
    pub differences: Vec<AuditFinding>,
    /// Final fines whose loan changed after they were made final (a back-dated return, say):
    /// not errors, for a librarian to review.
    pub corrections_total: usize,
    pub corrections: Vec<AuditFinding>,
    /// Loans waiting in the change queue: the next run brings their fines up to date.
    pub pending_accrual_total: usize,
    pub pending_accrual: Vec<AuditFinding>,
    /// The month's `AUDIT` alert after this audit, if it has one (raised now or earlier,
    /// resolved now or earlier).
    pub alert: Option<Alert>,
    /// This audit raised `alert`.
    pub alert_raised: bool,
    /// This audit resolved `alert` (no differences any more).
    pub alert_resolved: bool,
    pub duration_ms: u64,
}

/// One thing that differs in one loan's month.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct AuditFinding {
    #[schema(value_type = i64)]
    pub loan_id: LoanId,
    /// The stored fine, if there is one.
    pub fine_id: Option<i64>,
    pub reason: Reason,
    /// The stored fine's status: `PENDING`, `SETTLED` or `VOID`.
    pub fine_status: Option<String>,
    /// Recomputed from the loan (0 when it owes nothing for the month).
    pub expected_days: i32,
    pub expected_cents: i64,
    pub stored_days: Option<i32>,
    pub stored_cents: Option<i64>,
    /// The fine's CHARGE (positive) and REVERSAL (negative) entries.
    pub charged_cents: Option<i64>,
    pub reversed_cents: Option<i64>,
    /// When the loan last changed, and when its fine was settled: a correction is a change
    /// after the fine was made final.
    pub loan_updated_at: DateTime<Utc>,
    pub settled_at: Option<DateTime<Utc>>,
}

/// The findings of one list: all counted, the first [`MAX_LISTED`] kept.
#[derive(Debug, Default)]
pub(super) struct Listed {
    pub total: usize,
    pub items: Vec<AuditFinding>,
}

impl Listed {
    fn push(&mut self, finding: AuditFinding) {
        self.total += 1;
        if self.items.len() < MAX_LISTED {
            self.items.push(finding);
        }
    }
}

/// What the loans add up to.
#[derive(Debug, Default)]
pub(super) struct Tally {
    pub loans_checked: i64,
    pub fines_checked: i64,
    pub expected_cents: i64,
    pub settled_cents: i64,
    pub differences: Listed,
    pub corrections: Listed,
    pub pending_accrual: Listed,
    /// Every loan with a difference, for the alert (a few, unless something is badly wrong).
    pub difference_loans: BTreeSet<LoanId>,
}

impl Tally {
    /// The lists by loan id (the facts arrive in no particular order).
    pub fn sorted(mut self) -> Self {
        for list in [&mut self.differences, &mut self.corrections, &mut self.pending_accrual] {
            list.items.sort_by_key(|f| (f.loan_id, f.reason));
        }
        self
    }

    /// Counts one loan and files its findings.
    pub fn add(&mut self, facts: &LoanFacts, verdict: &Verdict) {
        self.loans_checked += 1;
        if let Some(fine) = &facts.fine {
            self.fines_checked += 1;
            if fine.status == crate::domain::FineStatus::Settled {
                self.settled_cents += fine.amount_cents;
            }
        }
        self.expected_cents += verdict.expected.map_or(0, |e| e.amount_cents);
        for finding in &verdict.findings {
            let item = finding_of(facts, verdict, finding.reason);
            match finding.class {
                Class::Difference => {
                    self.difference_loans.insert(facts.loan_id);
                    self.differences.push(item);
                }
                Class::Correction => self.corrections.push(item),
                Class::PendingAccrual => self.pending_accrual.push(item),
            }
        }
    }
}

fn finding_of(facts: &LoanFacts, verdict: &Verdict, reason: Reason) -> AuditFinding {
    let fine = facts.fine.as_ref();
    AuditFinding {
        loan_id: facts.loan_id,
        fine_id: fine.map(|f| f.id),
        reason,
        fine_status: fine.map(|f| f.status.as_str().to_owned()),
        expected_days: verdict.expected.map_or(0, |e| e.overdue_days),
        expected_cents: verdict.expected.map_or(0, |e| e.amount_cents),
        stored_days: fine.map(|f| f.overdue_days),
        stored_cents: fine.map(|f| f.amount_cents),
        charged_cents: fine.and_then(|f| f.charge_cents),
        reversed_cents: fine.and_then(|f| f.reversal_cents),
        loan_updated_at: facts.updated_at,
        settled_at: fine.and_then(|f| f.settled_at),
    }
}

/// The report as the CLI prints it.
impl fmt::Display for AuditReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "audit of {} ({}; settled through {}, start date {})",
            self.month, self.task_name, self.settled_through, self.start_date
        )?;
        writeln!(
            f,
            "  {} loans checked, {} fines; expected {} cents, settled {} cents; {} ms",
            self.loans_checked, self.fines_checked, self.expected_cents, self.settled_cents, self.duration_ms
        )?;
        for (title, total, items) in [
            ("differences", self.differences_total, &self.differences),
            ("corrections to review", self.corrections_total, &self.corrections),
            ("pending accrual", self.pending_accrual_total, &self.pending_accrual),
        ] {
            writeln!(f, "  {title}: {total}")?;
            for item in items {
                writeln!(f, "    {item}")?;
            }
            if items.len() < total {
                writeln!(f, "    ... and {} more", total - items.len())?;
            }
        }
        match &self.alert {
            Some(alert) => {
                let change = if self.alert_raised {
                    " (raised now)"
                } else if self.alert_resolved {
                    " (resolved now)"
                } else {
                    ""
                };
                writeln!(
                    f,
                    "  alert {} #{} {}{change}: {}",
                    alert.kind,
                    alert.id,
                    alert.state.as_str(),
                    alert.detail
                )
            }
            None => writeln!(f, "  no alert"),
        }
    }
}

impl fmt::Display for AuditFinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let show = |v: Option<i64>| v.map_or_else(|| "-".to_owned(), |v| v.to_string());
        write!(f, "loan {} ", self.loan_id)?;
        match self.fine_id {
            Some(id) => write!(f, "fine {id}")?,
            None => write!(f, "(no fine)")?,
        }
        write!(
            f,
            ": {}; expected {} days {} cents",
            self.reason.as_str(),
            self.expected_days,
            self.expected_cents
        )?;
        if let Some(status) = &self.fine_status {
            write!(
                f,
                "; stored {status} {} days {} cents, charged {}, reversed {}",
                show(self.stored_days.map(i64::from)),
                show(self.stored_cents),
                show(self.charged_cents),
                show(self.reversed_cents)
            )?;
        }
        Ok(())
    }
}

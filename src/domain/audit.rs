//! The audit's rules: what one loan's fine for an ended month should be, and how what is stored
//! differs from it.
//!
//! The settlement writes fines with set-based SQL; the audit recomputes them here, from the loan
//! alone, with the rules of §1 of docs/CONTRACT.md ([`final_fine`]), so that a bug in that SQL, a
//! hand edit or a lost ledger row shows up as a difference instead of agreeing with itself. The
//! store only fetches the facts of each loan ([`LoanFacts`]); everything that decides is here,
//! without I/O, so every case is a unit test.
//!
//! Each difference is sorted into one of three lists ([`Class`]):
//! - a **difference** is an error: money owed and not charged, charged twice, or a ledger that
//!   disagrees with its fine;
//! - a **correction** is a SETTLED (or settlement-voided) fine whose loan changed after the fine
//!   was made final, such as a return back-dated after its month was settled. History is never
//!   rewritten, so the fine keeps its amount; a librarian decides (void it, or leave it);
//! - **pending accrual**: the loan waits in the `loan_change` queue, and the next run brings its
//!   fines up to date. Not an error yet.
//!
//! A VOID fine is a person's decision (or the settlement's, for a loan left without an overdue
//! day); only its ledger is checked: a CHARGE needs its REVERSAL, and a REVERSAL its CHARGE.

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::calendar::{format_month, month_end, month_start};
use super::fine::{MonthlyFine, final_fine};
use super::ids::LoanId;
use super::loan::LoanTerms;
use super::status::FineStatus;

/// What the database holds about one loan for the audited month.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoanFacts {
    pub loan_id: LoanId,
    pub terms: LoanTerms,
    /// When the loan last changed (`loan.updated_at`, by the database clock).
    pub updated_at: DateTime<Utc>,
    /// Recorded or changed and not accrued since (a row in `loan_change`).
    pub queued: bool,
    /// The loan's fine for the month, if there is one.
    pub fine: Option<StoredFine>,
}

/// A stored fine and its ledger entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredFine {
    pub id: i64,
    pub status: FineStatus,
    pub overdue_days: i32,
    pub amount_cents: i64,
    pub settled_at: Option<DateTime<Utc>>,
    pub voided_at: Option<DateTime<Utc>>,
    /// Voided by the settlement for lack of overdue days (its void reason), not by a person.
    pub voided_by_settlement: bool,
    /// The CHARGE entry's amount (positive), if there is one.
    pub charge_cents: Option<i64>,
    /// The REVERSAL entry's amount (negative), if there is one.
    pub reversal_cents: Option<i64>,
}

/// Why a loan's month is not as recomputed: `missing_fine` (overdue days and no fine),
/// `not_settled` (still PENDING), `amount_differs` (settled at other days or amount),
/// `unexpected_fine` (a fine where nothing is owed), `voided_but_owed` (voided by the settlement
/// although days are owed), `missing_charge`, `charge_differs`, `unexpected_charge`,
/// `unexpected_reversal`, `missing_reversal` (a VOID fine's CHARGE not reversed),
/// `reversal_differs`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, ToSchema, strum::IntoStaticStr,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Reason {
    /// The loan has overdue days in the month and no fine.
    MissingFine,
    /// The fine is still PENDING although its month has ended and its dates are settled.
    NotSettled,
    /// The fine was settled at other overdue days or another amount than recomputed.
    AmountDiffers,
    /// A fine (not VOID) where the loan has no overdue day in the month, or in a month before
    /// the job's start month.
    UnexpectedFine,
    /// The settlement voided the fine for lack of overdue days, but the loan has some.
    VoidedButOwed,
    /// A SETTLED fine with an amount and no CHARGE.
    MissingCharge,
    /// The CHARGE is not the fine's amount.
    ChargeDiffers,
    /// A CHARGE on a fine that owes none (PENDING, or settled at zero).
    UnexpectedCharge,
    /// A REVERSAL on a fine that is not VOID, or on one that was never charged.
    UnexpectedReversal,
    /// A VOID fine whose CHARGE was never reversed.
    MissingReversal,
    /// The REVERSAL is not the opposite of the CHARGE.
    ReversalDiffers,
}

impl Reason {
    /// The wire spelling (`missing_fine`...), for people reading logs and the CLI.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// Which list a finding goes to; see the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Difference,
    Correction,
    PendingAccrual,
}

/// One thing wrong with one loan's month.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Finding {
    pub reason: Reason,
    pub class: Class,
}

/// The audit of one loan's month: what it should be, and what differs. At most two findings:
/// one about the fine, one about its ledger entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// The recomputed fine; `None` when the loan owes nothing for the month.
    pub expected: Option<MonthlyFine>,
    pub findings: Vec<Finding>,
}

/// Audits one loan's fine for `month` (any day of it), an ended month whose dates are all
/// settled; `start_month` is the month of the job's start date, before which nothing is owed.
pub fn audit_loan(facts: &LoanFacts, month: NaiveDate, start_month: NaiveDate) -> Verdict {
    let month = month_start(month);
    let expected = if month >= month_start(start_month) {
        final_fine(&facts.terms, month)
    } else {
        None
    };
    let mut findings = Vec::new();
    findings.extend(fine_finding(facts, expected.as_ref()));
    if let Some(fine) = &facts.fine {
        findings.extend(ledger_reason(fine).map(|reason| Finding {
            reason,
            class: Class::Difference,
        }));
    }
    Verdict { expected, findings }
}

/// The fine against the recomputation.
fn fine_finding(facts: &LoanFacts, expected: Option<&MonthlyFine>) -> Option<Finding> {
    // What the next run will do for a queued loan: accrue its missing or PENDING fines and
    // settle them. A SETTLED or VOID fine it never touches.
    let awaiting_run = |reason| Finding {
        reason,
        class: if facts.queued {
            Class::PendingAccrual
        } else {
            Class::Difference
        },
    };
    // A final fine whose loan changed afterwards keeps its amount by design.
    let made_final_before_change = |reason, at: Option<DateTime<Utc>>| Finding {
        reason,
        class: if at.is_some_and(|at| facts.updated_at > at) {
            Class::Correction
        } else {
            Class::Difference
        },
    };
    let Some(fine) = &facts.fine else {
        return expected.map(|_| awaiting_run(Reason::MissingFine));
    };
    match fine.status {
        FineStatus::Pending => Some(awaiting_run(Reason::NotSettled)),
        FineStatus::Settled => {
            let owed = expected.map_or((0, 0), |e| (e.overdue_days, e.amount_cents));
            if (fine.overdue_days, fine.amount_cents) == owed {
                return None;
            }
            let reason = if expected.is_some() {
                Reason::AmountDiffers
            } else {
                Reason::UnexpectedFine
            };
            Some(made_final_before_change(reason, fine.settled_at))
        }
        FineStatus::Void => (fine.voided_by_settlement && expected.is_some())
            .then(|| made_final_before_change(Reason::VoidedButOwed, fine.voided_at)),
    }
}

/// The fine's ledger entries against its status and amount: exactly one CHARGE of the amount
/// for a SETTLED fine that owes something; for a VOID one, a REVERSAL for every CHARGE.
fn ledger_reason(fine: &StoredFine) -> Option<Reason> {
    match fine.status {
        FineStatus::Pending => match (fine.charge_cents, fine.reversal_cents) {
            (Some(_), _) => Some(Reason::UnexpectedCharge),
            (None, Some(_)) => Some(Reason::UnexpectedReversal),
            (None, None) => None,
        },
        FineStatus::Settled => {
            let owed = (fine.amount_cents > 0).then_some(fine.amount_cents);
            match (owed, fine.charge_cents) {
                (Some(_), None) => Some(Reason::MissingCharge),
                (Some(owed), Some(charged)) if charged != owed => Some(Reason::ChargeDiffers),
                (None, Some(_)) => Some(Reason::UnexpectedCharge),
                _ if fine.reversal_cents.is_some() => Some(Reason::UnexpectedReversal),
                _ => None,
            }
        }
        FineStatus::Void => match (fine.charge_cents, fine.reversal_cents) {
            (Some(charged), _) if charged != fine.amount_cents => Some(Reason::ChargeDiffers),
            (Some(_), None) => Some(Reason::MissingReversal),
            (Some(charged), Some(reversed)) if reversed != -charged => Some(Reason::ReversalDiffers),
            (None, Some(_)) => Some(Reason::UnexpectedReversal),
            _ => None,
        },
    }
}

/// Why a month cannot be audited yet: its fines are not all final, so a recomputation would
/// report the work the job has still to do as differences.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NotFinal {
    #[error("{} is not final: no business date was ever settled", format_month(*.month))]
    NothingSettled { month: NaiveDate },
    #[error(
        "{} is not final: the latest settled date is {settled_through}, before the month's last day {last_day}",
        format_month(*.month)
    )]
    NotEnded {
        month: NaiveDate,
        last_day: NaiveDate,
        settled_through: NaiveDate,
    },
    #[error("{} is not final: {unsettled} has no SUCCESS yet", format_month(*.month))]
    Unsettled { month: NaiveDate, unsettled: NaiveDate },
}

/// A month can be audited once the latest settled date is on or after its last day and none of
/// its dates (from the job's start date on) is left without SUCCESS: then every fine of the
/// month has been made final by some run, and nothing the job will still do changes it, except
/// for the loans waiting in the `loan_change` queue (listed apart).
///
/// `first_unsettled` is the first date of the month, from the start date on, without SUCCESS.
pub fn check_final(
    month: NaiveDate,
    settled_through: Option<NaiveDate>,
    first_unsettled: Option<NaiveDate>,
) -> Result<(), NotFinal> {
    let month = month_start(month);
    let last_day = month_end(month);
    let Some(settled_through) = settled_through else {
        return Err(NotFinal::NothingSettled { month });
    };
    if settled_through < last_day {
        return Err(NotFinal::NotEnded {
            month,
            last_day,
            settled_through,
        });
    }
    match first_unsettled {
        Some(unsettled) => Err(NotFinal::Unsettled { month, unsettled }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::testutil::ymd;

    fn march() -> NaiveDate {
        ymd(2026, 3, 1)
    }

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    /// Due on March 10, returned on March 20: ten overdue days in March at 50 cents.
    fn loan() -> LoanTerms {
        LoanTerms {
            borrowed_on: ymd(2026, 3, 1),
            due_on: ymd(2026, 3, 10),
            returned_on: Some(ymd(2026, 3, 20)),
            daily_fine_cents: 50,
        }
    }

    /// The fine as the settlement leaves it on April 1: SETTLED, charged.
    fn settled(days: i32, amount: i64) -> StoredFine {
        StoredFine {
            id: 9,
            status: FineStatus::Settled,
            overdue_days: days,
            amount_cents: amount,
            settled_at: Some(at("2026-03-31T18:00:00Z")),
            voided_at: None,
            voided_by_settlement: false,
            charge_cents: (amount > 0).then_some(amount),
            reversal_cents: None,
        }
    }

    fn facts(terms: LoanTerms, fine: Option<StoredFine>) -> LoanFacts {
        LoanFacts {
            loan_id: LoanId(1),
            terms,
            updated_at: at("2026-03-20T04:00:00Z"),
            queued: false,
            fine,
        }
    }

    fn reasons(v: &Verdict) -> Vec<(Reason, Class)> {
        v.findings.iter().map(|f| (f.reason, f.class)).collect()
    }

    fn audit(f: &LoanFacts) -> Vec<(Reason, Class)> {
        reasons(&audit_loan(f, march(), ymd(2026, 1, 1)))
    }

    #[test]
    fn a_fine_settled_and_charged_as_recomputed_is_clean() {
        let v = audit_loan(&facts(loan(), Some(settled(10, 500))), march(), ymd(2026, 1, 1));
        assert_eq!(v.expected.map(|e| (e.overdue_days, e.amount_cents)), Some((10, 500)));
        assert!(v.findings.is_empty(), "{v:?}");
        // No overdue day in March, and no fine: nothing to say.
        let on_time = LoanTerms {
            returned_on: Some(ymd(2026, 3, 10)),
            ..loan()
        };
        assert!(audit(&facts(on_time, None)).is_empty());
    }

    #[test]
    fn a_zero_daily_fine_settles_without_a_charge() {
        let free = LoanTerms {
            daily_fine_cents: 0,
            ..loan()
        };
        assert!(audit(&facts(free, Some(settled(10, 0)))).is_empty());
        let mut charged = settled(10, 0);
        charged.charge_cents = Some(1);
        assert_eq!(
            audit(&facts(free, Some(charged))),
            [(Reason::UnexpectedCharge, Class::Difference)]
        );
    }

    #[test]
    fn a_missing_or_pending_fine_is_an_error_unless_the_loan_is_queued() {
        assert_eq!(audit(&facts(loan(), None)), [(Reason::MissingFine, Class::Difference)]);
        let mut pending = settled(7, 350);
        pending.status = FineStatus::Pending;
        pending.settled_at = None;
        pending.charge_cents = None;
        assert_eq!(
            audit(&facts(loan(), Some(pending.clone()))),
            [(Reason::NotSettled, Class::Difference)]
        );

        let mut queued = facts(loan(), None);
        queued.queued = true;
        assert_eq!(audit(&queued), [(Reason::MissingFine, Class::PendingAccrual)]);
        queued.fine = Some(pending);
        assert_eq!(audit(&queued), [(Reason::NotSettled, Class::PendingAccrual)]);
    }

    /// The loan with its return back-dated after March was settled (on April 5, March 20 became
    /// March 12), and its March fine as settled before: 10 days, 500 cents.
    fn back_dated_after_settling() -> LoanFacts {
        let mut f = facts(
            LoanTerms {
                returned_on: Some(ymd(2026, 3, 12)),
                ..loan()
            },
            Some(settled(10, 500)),
        );
        f.updated_at = at("2026-04-05T09:00:00Z");
        f
    }

    #[test]
    fn a_settled_amount_that_differs_is_a_correction_only_when_the_loan_changed_after_settling() {
        // Tampered: the loan has not changed since it was settled.
        assert_eq!(
            audit(&facts(loan(), Some(settled(11, 550)))),
            [(Reason::AmountDiffers, Class::Difference)]
        );
        let mut corrected = back_dated_after_settling();
        assert_eq!(audit(&corrected), [(Reason::AmountDiffers, Class::Correction)]);
        // Back-dated to the due date: nothing is owed any more, the settled fine stays.
        corrected.terms.returned_on = Some(ymd(2026, 3, 10));
        assert_eq!(audit(&corrected), [(Reason::UnexpectedFine, Class::Correction)]);
        // The same, changed before it was settled: the settlement should have seen it.
        corrected.updated_at = at("2026-03-25T09:00:00Z");
        assert_eq!(audit(&corrected), [(Reason::UnexpectedFine, Class::Difference)]);
    }

    #[test]
    fn months_before_the_start_month_owe_nothing() {
        let v = audit_loan(&facts(loan(), None), march(), ymd(2026, 4, 15));
        assert_eq!(v.expected, None);
        assert!(v.findings.is_empty());
        let v = audit_loan(&facts(loan(), Some(settled(10, 500))), march(), ymd(2026, 4, 15));
        assert_eq!(reasons(&v), [(Reason::UnexpectedFine, Class::Difference)]);
    }

    #[test]
    fn a_settled_fine_needs_exactly_its_charge_and_no_reversal() {
        let mut fine = settled(10, 500);
        fine.charge_cents = None;
        assert_eq!(
            audit(&facts(loan(), Some(fine.clone()))),
            [(Reason::MissingCharge, Class::Difference)]
        );
        fine.charge_cents = Some(499);
        assert_eq!(
            audit(&facts(loan(), Some(fine.clone()))),
            [(Reason::ChargeDiffers, Class::Difference)]
        );
        fine.charge_cents = Some(500);
        fine.reversal_cents = Some(-500);
        assert_eq!(
            audit(&facts(loan(), Some(fine))),
            [(Reason::UnexpectedReversal, Class::Difference)]
        );
    }

    #[test]
    fn a_fine_and_its_ledger_are_judged_separately() {
        // A correction, and a lost CHARGE: the CHARGE is an error whatever the loan did.
        let mut f = back_dated_after_settling();
        f.fine.as_mut().unwrap().charge_cents = None;
        assert_eq!(
            audit(&f),
            [
                (Reason::AmountDiffers, Class::Correction),
                (Reason::MissingCharge, Class::Difference)
            ]
        );
    }

    #[test]
    fn a_void_fine_is_a_decision_but_its_charge_must_be_reversed() {
        let void = |charge: Option<i64>, reversal: Option<i64>| StoredFine {
            status: FineStatus::Void,
            voided_at: Some(at("2026-04-02T09:00:00Z")),
            charge_cents: charge,
            reversal_cents: reversal,
            ..settled(10, 500)
        };
        // Voided from PENDING (no ledger) or from SETTLED (charged, then reversed): clean, even
        // though the loan owes 500.
        assert!(audit(&facts(loan(), Some(void(None, None)))).is_empty());
        assert!(audit(&facts(loan(), Some(void(Some(500), Some(-500))))).is_empty());
        assert_eq!(
            audit(&facts(loan(), Some(void(Some(500), None)))),
            [(Reason::MissingReversal, Class::Difference)]
        );
        assert_eq!(
            audit(&facts(loan(), Some(void(Some(500), Some(-400))))),
            [(Reason::ReversalDiffers, Class::Difference)]
        );
        assert_eq!(
            audit(&facts(loan(), Some(void(None, Some(-500))))),
            [(Reason::UnexpectedReversal, Class::Difference)]
        );
    }

    #[test]
    fn a_fine_voided_by_the_settlement_while_the_loan_owes_is_reported() {
        let mut fine = StoredFine {
            status: FineStatus::Void,
            overdue_days: 0,
            amount_cents: 0,
            settled_at: None,
            voided_at: Some(at("2026-03-31T18:00:00Z")),
            voided_by_settlement: true,
            charge_cents: None,
            reversal_cents: None,
            id: 9,
        };
        assert_eq!(
            audit(&facts(loan(), Some(fine.clone()))),
            [(Reason::VoidedButOwed, Class::Difference)]
        );
        // The return was moved later again after the void: a correction to review.
        let mut f = facts(loan(), Some(fine.clone()));
        f.updated_at = at("2026-04-03T09:00:00Z");
        assert_eq!(audit(&f), [(Reason::VoidedButOwed, Class::Correction)]);
        // Nothing owed: the void was right.
        fine.voided_by_settlement = true;
        let on_time = LoanTerms {
            returned_on: Some(ymd(2026, 3, 10)),
            ..loan()
        };
        assert!(audit(&facts(on_time, Some(fine))).is_empty());
    }

    #[test]
    fn a_month_is_final_once_its_last_day_and_every_date_before_it_are_settled() {
        assert_eq!(
            check_final(march(), None, None),
            Err(NotFinal::NothingSettled { month: march() })
        );
        assert!(matches!(
            check_final(march(), Some(ymd(2026, 3, 30)), None),
            Err(NotFinal::NotEnded { .. })
        ));
        assert_eq!(
            check_final(march(), Some(ymd(2026, 4, 2)), Some(ymd(2026, 3, 12))),
            Err(NotFinal::Unsettled {
                month: march(),
                unsettled: ymd(2026, 3, 12)
            })
        );
        assert_eq!(check_final(ymd(2026, 3, 17), Some(ymd(2026, 3, 31)), None), Ok(()));
        let refused = check_final(march(), Some(ymd(2026, 3, 30)), None).unwrap_err();
        assert_eq!(
            refused.to_string(),
            "2026-03 is not final: the latest settled date is 2026-03-30, before the month's last day 2026-03-31"
        );
    }

    #[test]
    fn reason_spellings_match_serde() {
        for reason in [
            Reason::MissingFine,
            Reason::NotSettled,
            Reason::AmountDiffers,
            Reason::UnexpectedFine,
            Reason::VoidedButOwed,
            Reason::MissingCharge,
            Reason::ChargeDiffers,
            Reason::UnexpectedCharge,
            Reason::UnexpectedReversal,
            Reason::MissingReversal,
            Reason::ReversalDiffers,
        ] {
            assert_eq!(
                serde_json::to_value(reason).unwrap(),
                serde_json::Value::from(reason.as_str())
            );
        }
    }
}

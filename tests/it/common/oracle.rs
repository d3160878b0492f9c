//! The oracle: CONTRACT §2.4 applied day by day to an in-memory model of the fines and the ledger.
//!
//! Independent of the SQL: it counts overdue days one day at a time with
//! `LoanTerms::is_overdue_day` (the definition, not the closed form), and checks itself against
//! `domain::accrue` / `domain::final_fine` on every fine it writes.

use std::collections::BTreeMap;

use chrono::NaiveDate;
use finesettle::domain::{FineStatus, LoanTerms, accrue, final_fine, is_final, month_end, month_start};

/// A fine as the tests compare it: no ids, timestamps or fencing tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Fine {
    pub loan_id: i64,
    pub settle_month: NaiveDate,
    pub overdue_days: i32,
    pub amount_cents: i64,
    pub accrued_through: NaiveDate,
    /// `PENDING`, `SETTLED` or `VOID` (text: `FineStatus` has no order to sort by).
    pub status: &'static str,
}

/// A ledger entry as the tests compare it: the fine it belongs to, by business key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Entry {
    pub loan_id: i64,
    pub settle_month: NaiveDate,
    pub kind: &'static str,
    pub amount_cents: i64,
}

/// The expected state after running business dates in order, for a job whose start date is
/// `start`: it knows every loan from the start, so a loan's fines never depend on when it was
/// recorded (CONTRACT §2.4).
#[derive(Debug, Clone)]
pub struct Model {
    start: NaiveDate,
    fines: BTreeMap<(i64, NaiveDate), Fine>,
}

impl Model {
    /// An empty model of a job started on `start`.
    pub fn new(start: NaiveDate) -> Self {
        Model {
            start,
            fines: BTreeMap::new(),
        }
    }

    /// A model after running `dates` (in the given order) over `loans`.
    pub fn after(start: NaiveDate, loans: &[(i64, LoanTerms)], dates: &[NaiveDate]) -> Self {
        let mut model = Model::new(start);
        for &d in dates {
            model.run_date(loans, d);
        }
        model
    }

    /// One business date: accrue every month from the start month through the month of `d` as
    /// of `d`, then settle what is final on `d`.
    pub fn run_date(&mut self, loans: &[(i64, LoanTerms)], d: NaiveDate) {
        for &(loan_id, loan) in loans {
            let days = overdue_days(&loan, month_start(d), d);
            assert_eq!(
                accrue(&loan, d).map(|f| (f.overdue_days, f.amount_cents)),
                (days > 0).then_some((days, i64::from(days) * loan.daily_fine_cents)),
                "domain::accrue disagrees for loan {loan_id} on {d}"
            );
            let mut month = month_start(self.start);
            while month <= d {
                self.accrue(loan_id, &loan, month, d);
                month = month_end(month).succ_opt().unwrap();
            }
        }
        let by_id: BTreeMap<i64, LoanTerms> = loans.iter().copied().collect();
        for fine in self.fines.values_mut() {
            let loan = by_id[&fine.loan_id];
            if fine.status != FineStatus::Pending.as_str() || !is_final(fine.settle_month, loan.returned_on, d) {
                continue;
            }
            // The final amount: every overdue day of the month, up to the return.
            let last = loan
                .returned_on
                .map_or(month_end(fine.settle_month), |r| r.min(month_end(fine.settle_month)));
            let days = overdue_days(&loan, fine.settle_month, last);
            fine.overdue_days = days;
            fine.amount_cents = i64::from(days) * loan.daily_fine_cents;
            fine.accrued_through = last.max(fine.settle_month);
            fine.status = if days > 0 {
                FineStatus::Settled
            } else {
                FineStatus::Void
            }
            .as_str();
            let domain = final_fine(&loan, fine.settle_month);
            assert_eq!(
                domain.map(|f| (f.overdue_days, f.amount_cents, f.accrued_through)),
                (days > 0).then_some((fine.overdue_days, fine.amount_cents, fine.accrued_through)),
                "domain::final_fine disagrees for loan {}",
                fine.loan_id
            );
        }
    }

    /// The fine of `month` as of `d` (every overdue day of the month up to `d`), moving only a
    /// PENDING fine and only forward.
    fn accrue(&mut self, loan_id: i64, loan: &LoanTerms, month: NaiveDate, d: NaiveDate) {
        let through = d.min(month_end(month));
        let days = overdue_days(loan, month, through);
        if days == 0 {
            return;
        }
        let accrued = Fine {
            loan_id,
            settle_month: month,
            overdue_days: days,
            amount_cents: i64::from(days) * loan.daily_fine_cents,
            accrued_through: loan.returned_on.map_or(through, |r| r.min(through)),
            status: FineStatus::Pending.as_str(),
        };
        let fine = self.fines.entry((loan_id, month)).or_insert(accrued);
        if fine.status == FineStatus::Pending.as_str() && fine.accrued_through < accrued.accrued_through {
            *fine = accrued;
        }
    }

    pub fn fines(&self) -> Vec<Fine> {
        self.fines.values().copied().collect()
    }

    /// One CHARGE per SETTLED fine of a positive amount (the ledger takes no zero entry).
    pub fn ledger(&self) -> Vec<Entry> {
        let mut entries: Vec<Entry> = self
            .fines
            .values()
            .filter(|f| f.status == FineStatus::Settled.as_str() && f.amount_cents > 0)
            .map(|f| Entry {
                loan_id: f.loan_id,
                settle_month: f.settle_month,
                kind: "CHARGE",
                amount_cents: f.amount_cents,
            })
            .collect();
        entries.sort();
        entries
    }

    pub fn count(&self, status: FineStatus) -> usize {
        self.fines.values().filter(|f| f.status == status.as_str()).count()
    }
}

/// Overdue days of `loan` in the month `month` up to `through`, counted one day at a time.
fn overdue_days(loan: &LoanTerms, month: NaiveDate, through: NaiveDate) -> i32 {
    let n = month
        .iter_days()
        .take_while(|d| *d <= through && *d <= month_end(month))
        .filter(|d| loan.is_overdue_day(*d))
        .count();
    i32::try_from(n).unwrap()
}

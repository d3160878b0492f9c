//! Loans and their overdue days.
//!
//! A loan's fine is driven entirely by which business dates are *overdue days*. The rule lives
//! here once, both as a per-day predicate (the definition, used by tests as the oracle) and as a
//! closed-form day count over a date range (what the fine calculation uses, so it does not
//! iterate day by day).

use chrono::NaiveDate;
use thiserror::Error;

use super::fine::MAX_DAILY_FINE_CENTS;

/// The fine-relevant terms of one loan, all as business dates.
///
/// `daily_fine_cents` is copied from the policy when the loan is created, so a later policy
/// change never rewrites the fines of existing loans.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoanTerms {
    /// Business date the book was borrowed.
    pub borrowed_on: NaiveDate,
    /// Last day the book may be kept without a fine.
    pub due_on: NaiveDate,
    /// Business date of the return (the business date of `returned_at`), `None` while open.
    pub returned_on: Option<NaiveDate>,
    /// Fine per overdue day, in cents.
    pub daily_fine_cents: i64,
}

/// Why a set of loan terms is not acceptable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum LoanError {
    /// The due date lies before the borrow date.
    #[error("due_on {due_on} is before borrowed_on {borrowed_on}")]
    DueBeforeBorrowed { borrowed_on: NaiveDate, due_on: NaiveDate },
    /// The return lies before the borrow date.
    #[error("returned_on {returned_on} is before borrowed_on {borrowed_on}")]
    ReturnedBeforeBorrowed {
        borrowed_on: NaiveDate,
        returned_on: NaiveDate,
    },
    /// The daily fine is negative or above [`MAX_DAILY_FINE_CENTS`].
    #[error("daily_fine_cents {0} is outside 0..={MAX_DAILY_FINE_CENTS}")]
    DailyFineOutOfRange(i64),
}

impl LoanTerms {
    /// Checks the invariants every stored loan should satisfy: `borrowed_on <= due_on`,
    /// `borrowed_on <= returned_on`, and `0 <= daily_fine_cents <= MAX_DAILY_FINE_CENTS`.
    ///
    /// Within these bounds every fine calculation is overflow-free (see
    /// [`MAX_DAILY_FINE_CENTS`]). "Not in the future" for a return depends on the clock and is the
    /// caller's check.
    pub fn validate(&self) -> Result<(), LoanError> {
        if self.due_on < self.borrowed_on {
            return Err(LoanError::DueBeforeBorrowed {
                borrowed_on: self.borrowed_on,
                due_on: self.due_on,
            });
        }
        if let Some(returned_on) = self.returned_on
            && returned_on < self.borrowed_on
        {
            return Err(LoanError::ReturnedBeforeBorrowed {
                borrowed_on: self.borrowed_on,
                returned_on,
            });
        }
        if !(0..=MAX_DAILY_FINE_CENTS).contains(&self.daily_fine_cents) {
            return Err(LoanError::DailyFineOutOfRange(self.daily_fine_cents));
        }
        Ok(())
    }

    /// Day d is overdue when d > due_on and the loan was not returned before d
    /// (returned on business date r: days up to and including r count).
    ///
    /// So a book returned on its due date owes nothing, and one returned the day after owes one
    /// day: the day of the return counts because the member kept the book that day.
    ///
    /// Days before `borrowed_on` are never overdue. For valid terms (`due_on >= borrowed_on`)
    /// this adds nothing to the rule; it only keeps malformed terms from being fined for days
    /// before the book was lent.
    pub fn is_overdue_day(&self, d: NaiveDate) -> bool {
        d > self.due_on && d >= self.borrowed_on && self.returned_on.is_none_or(|r| d <= r)
    }

    /// The first overdue day of the loan, ignoring any return: the day after `due_on`.
    /// `None` only when `due_on` is the last date chrono can represent.
    pub fn first_overdue_day(&self) -> Option<NaiveDate> {
        self.due_on.succ_opt().map(|d| d.max(self.borrowed_on))
    }

    /// The number of overdue days `d` with `from <= d <= to`, in closed form.
    ///
    /// Equal to counting `is_overdue_day` over every day of the range (the property tests check
    /// exactly that), but O(1), so callers can work with months without iterating days.
    /// Returns 0 for an empty range (`from > to`).
    pub fn overdue_days_between(&self, from: NaiveDate, to: NaiveDate) -> i64 {
        let Some(first) = self.first_overdue_day() else {
            return 0;
        };
        let start = from.max(first);
        let end = match self.returned_on {
            Some(r) => to.min(r),
            None => to,
        };
        if end < start { 0 } else { (end - start).num_days() + 1 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::testutil::{arb_loan, ymd};
    use proptest::prelude::*;

    fn loan(borrowed: NaiveDate, due: NaiveDate, returned: Option<NaiveDate>) -> LoanTerms {
        LoanTerms {
            borrowed_on: borrowed,
            due_on: due,
            returned_on: returned,
            daily_fine_cents: 50,
        }
    }

    #[test]
    fn due_date_itself_is_not_overdue() {
        let l = loan(ymd(2024, 1, 1), ymd(2024, 1, 15), None);
        assert!(!l.is_overdue_day(ymd(2024, 1, 15)));
        assert!(l.is_overdue_day(ymd(2024, 1, 16)));
        assert!(!l.is_overdue_day(ymd(2023, 12, 31)));
    }

    #[test]
    fn returned_on_due_date_has_no_overdue_day() {
        let due = ymd(2024, 1, 15);
        let l = loan(ymd(2024, 1, 1), due, Some(due));
        assert_eq!(l.overdue_days_between(ymd(2024, 1, 1), ymd(2024, 12, 31)), 0);
        assert!(!l.is_overdue_day(ymd(2024, 1, 16)));
    }

    #[test]
    fn returned_day_after_due_has_one_overdue_day() {
        let l = loan(ymd(2024, 1, 1), ymd(2024, 1, 15), Some(ymd(2024, 1, 16)));
        assert!(l.is_overdue_day(ymd(2024, 1, 16)));
        assert!(!l.is_overdue_day(ymd(2024, 1, 17)));
        assert_eq!(l.overdue_days_between(ymd(2024, 1, 1), ymd(2024, 12, 31)), 1);
    }

    #[test]
    fn returned_day_borrowed_has_no_overdue_day() {
        let b = ymd(2024, 1, 1);
        let l = loan(b, ymd(2024, 1, 15), Some(b));
        assert_eq!(l.overdue_days_between(b, ymd(2030, 12, 31)), 0);
    }

    #[test]
    fn open_loan_counts_through_the_range_end() {
        let l = loan(ymd(2024, 1, 1), ymd(2024, 1, 29), None);
        // 2024-01-30 .. 2024-02-29 (leap day included): 2 + 29 days.
        assert_eq!(l.overdue_days_between(ymd(2024, 1, 1), ymd(2024, 2, 29)), 31);
        assert_eq!(l.overdue_days_between(ymd(2024, 2, 1), ymd(2024, 2, 29)), 29);
        assert_eq!(l.overdue_days_between(ymd(2024, 3, 1), ymd(2024, 2, 29)), 0);
    }

    #[test]
    fn due_on_chrono_max_never_overdue() {
        let l = loan(ymd(2024, 1, 1), NaiveDate::MAX, None);
        assert_eq!(l.first_overdue_day(), None);
        assert_eq!(l.overdue_days_between(NaiveDate::MIN, NaiveDate::MAX), 0);
    }

    #[test]
    fn malformed_terms_never_fine_days_before_borrowing() {
        // due_on before borrowed_on is rejected by validate(), but must not fine phantom days.
        let l = loan(ymd(2024, 3, 10), ymd(2024, 3, 1), None);
        assert!(!l.is_overdue_day(ymd(2024, 3, 5)));
        assert!(l.is_overdue_day(ymd(2024, 3, 10)));
        assert_eq!(l.overdue_days_between(ymd(2024, 3, 1), ymd(2024, 3, 31)), 22);
        assert!(matches!(l.validate(), Err(LoanError::DueBeforeBorrowed { .. })));
    }

    #[test]
    fn validate_checks_return_and_daily_fine() {
        let ok = loan(ymd(2024, 1, 1), ymd(2024, 1, 15), Some(ymd(2024, 1, 1)));
        assert_eq!(ok.validate(), Ok(()));
        let early = loan(ymd(2024, 1, 2), ymd(2024, 1, 15), Some(ymd(2024, 1, 1)));
        assert!(matches!(
            early.validate(),
            Err(LoanError::ReturnedBeforeBorrowed { .. })
        ));
        for bad in [-1, MAX_DAILY_FINE_CENTS + 1] {
            let l = LoanTerms {
                daily_fine_cents: bad,
                ..ok
            };
            assert_eq!(l.validate(), Err(LoanError::DailyFineOutOfRange(bad)));
        }
        let max = LoanTerms {
            daily_fine_cents: MAX_DAILY_FINE_CENTS,
            ..ok
        };
        assert_eq!(max.validate(), Ok(()));
    }

    proptest! {
        #[test]
        fn generated_loans_are_valid(l in arb_loan()) {
            prop_assert_eq!(l.validate(), Ok(()));
        }

        #[test]
        fn closed_form_count_matches_day_by_day(
            l in arb_loan(),
            from_off in -40i64..500,
            len in -5i64..500,
        ) {
            let from = l.borrowed_on + chrono::Duration::days(from_off);
            let to = from + chrono::Duration::days(len);
            let brute = from.iter_days().take_while(|d| *d <= to)
                .filter(|d| l.is_overdue_day(*d)).count() as i64;
            prop_assert_eq!(l.overdue_days_between(from, to), brute);
        }
    }
}

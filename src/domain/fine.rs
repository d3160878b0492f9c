//! Monthly fines: how much a loan owes for a month as of a business date, and when that amount
//! is final.
//!
//! A fine row is keyed by `(loan, settle_month)`. The nightly job recomputes the month-of-`D`
//! fine for each business date `D` and settles it once it is final. Everything here is a pure
//! function of the loan terms and dates, which is what makes re-running a date, or running dates
//! out of order, converge on the same rows.

use chrono::NaiveDate;
use thiserror::Error;

use super::calendar::{month_end, month_start};
use super::loan::LoanTerms;

pub use super::status::{FineStatus, LedgerKind, ParseStatusError, can_transition};

/// The largest daily fine the service accepts, in cents (1,000,000.00 in major units).
///
/// Why the bound: a month has at most 31 overdue days, so a monthly amount is at most
/// `31 × MAX_DAILY_FINE_CENTS` = 3.1e9, far below `i64::MAX` (≈ 9.2e18). Overflow of
/// `days × daily_fine_cents` is therefore impossible for any loan that passes
/// [`LoanTerms::validate`]; it would take a daily fine above `i64::MAX / 31` (≈ 3e17). The
/// multiplication is still checked so that a corrupt row cannot silently wrap into a wrong
/// (possibly negative) charge.
pub const MAX_DAILY_FINE_CENTS: i64 = 100_000_000;

/// The most overdue days any single month can hold.
const MAX_DAYS_IN_MONTH: i64 = 31;

// The documented bound, checked by the compiler.
const _: () = assert!(MAX_DAILY_FINE_CENTS.checked_mul(MAX_DAYS_IN_MONTH).is_some());

/// The fine of one loan for one month, as of some business date.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MonthlyFine {
    /// First day of the month the fine is for.
    pub settle_month: NaiveDate,
    /// Overdue days counted so far in that month (1..=31).
    pub overdue_days: i32,
    /// `overdue_days × daily_fine_cents`.
    pub amount_cents: i64,
    /// The last day that is counted or could still be counted:
    /// `min(as_of, month_end, returned_on)`. Never moves backwards as `as_of` grows, so a writer
    /// can refuse to move it backwards and still converge.
    pub accrued_through: NaiveDate,
}

/// A fine amount that does not fit in `i64`. Impossible for valid loans (see
/// [`MAX_DAILY_FINE_CENTS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error("fine of {overdue_days} days × {daily_fine_cents} cents overflows i64")]
pub struct FineOverflow {
    pub overdue_days: i32,
    pub daily_fine_cents: i64,
}

/// The fine of `loan` for the month containing `as_of`, as of business date `as_of`
/// (overdue days d with month(d) = month(as_of) and d <= as_of) × daily_fine_cents.
/// None when there is no such overdue day. accrued_through = min(as_of, month_end, returned_on):
/// the last day that is counted or could still be counted; this makes running dates out of order
/// give the same rows as running them in order.
///
/// # Panics
/// Only when the amount overflows `i64`, which needs `daily_fine_cents > i64::MAX / 31`; see
/// [`MAX_DAILY_FINE_CENTS`]. Use [`try_fine_for_month`] for unvalidated input.
pub fn accrue(loan: &LoanTerms, as_of: NaiveDate) -> Option<MonthlyFine> {
    fine_for_month(loan, as_of, as_of)
}

/// The same for an arbitrary month `settle_month` (any day of that month accepted, normalised to
/// its first day) as of `as_of` (only days <= as_of count).
///
/// # Panics
/// As [`accrue`]: only on `i64` overflow, impossible for valid loans.
pub fn fine_for_month(loan: &LoanTerms, settle_month: NaiveDate, as_of: NaiveDate) -> Option<MonthlyFine> {
    try_fine_for_month(loan, settle_month, as_of).unwrap_or_else(|e| panic!("{e}"))
}

/// [`fine_for_month`] without the panic: `Err` when the amount overflows `i64`.
pub fn try_fine_for_month(
    loan: &LoanTerms,
    settle_month: NaiveDate,
    as_of: NaiveDate,
) -> Result<Option<MonthlyFine>, FineOverflow> {
    let month = month_start(settle_month);
    let last = month_end(month);
    let days = loan.overdue_days_between(month, as_of.min(last));
    if days == 0 {
        return Ok(None);
    }
    // days <= 31 because the range lies within one month.
    let overdue_days = i32::try_from(days).expect("at most 31 days in a month");
    let amount_cents = days.checked_mul(loan.daily_fine_cents).ok_or(FineOverflow {
        overdue_days,
        daily_fine_cents: loan.daily_fine_cents,
    })?;
    let mut accrued_through = as_of.min(last);
    if let Some(r) = loan.returned_on {
        accrued_through = accrued_through.min(r);
    }
    Ok(Some(MonthlyFine {
        settle_month: month,
        overdue_days,
        amount_cents,
        accrued_through,
    }))
}

/// A PENDING fine is final on business date `on` when its month has ended by `on`
/// (month_end(settle_month) <= on) or its loan was returned on or before `on`.
///
/// Once final, the fine's amount can no longer change: no later day of the month can become
/// overdue. `settle_month` may be any day of the month.
pub fn is_final(settle_month: NaiveDate, returned_on: Option<NaiveDate>, on: NaiveDate) -> bool {
    month_end(settle_month) <= on || returned_on.is_some_and(|r| r <= on)
}

/// The amount a fine settles at once final: all overdue days of its month
/// (equal to fine_for_month(loan, month, month_end(month)) ). None when no overdue day.
///
/// # Panics
/// As [`accrue`]: only on `i64` overflow, impossible for valid loans.
pub fn final_fine(loan: &LoanTerms, settle_month: NaiveDate) -> Option<MonthlyFine> {
    fine_for_month(loan, settle_month, month_end(settle_month))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::testutil::{arb_loan, arb_loan_and_date, oracle_fine, ymd};
    use chrono::Duration;
    use proptest::prelude::*;

    fn loan(borrowed: NaiveDate, due: NaiveDate, returned: Option<NaiveDate>, daily: i64) -> LoanTerms {
        LoanTerms {
            borrowed_on: borrowed,
            due_on: due,
            returned_on: returned,
            daily_fine_cents: daily,
        }
    }

    #[test]
    fn leap_day_is_an_overdue_day() {
        let l = loan(ymd(2024, 2, 1), ymd(2024, 2, 27), None, 50);
        let f = accrue(&l, ymd(2024, 2, 29)).unwrap();
        assert_eq!(
            f,
            MonthlyFine {
                settle_month: ymd(2024, 2, 1),
                overdue_days: 2, // Feb 28 and Feb 29
                amount_cents: 100,
                accrued_through: ymd(2024, 2, 29),
            }
        );
        assert_eq!(final_fine(&l, ymd(2024, 2, 1)), Some(f));
        assert!(is_final(ymd(2024, 2, 1), None, ymd(2024, 2, 29)));
        assert!(!is_final(ymd(2024, 2, 1), None, ymd(2024, 2, 28)));
        // 2023 has no Feb 29: Feb ends on the 28th.
        assert!(is_final(ymd(2023, 2, 1), None, ymd(2023, 2, 28)));
    }

    #[test]
    fn december_to_january_splits_by_month_and_year() {
        let l = loan(ymd(2023, 12, 1), ymd(2023, 12, 29), None, 50);
        let dec = final_fine(&l, ymd(2023, 12, 15)).unwrap();
        assert_eq!(dec.settle_month, ymd(2023, 12, 1));
        assert_eq!(dec.overdue_days, 2); // Dec 30, 31
        assert_eq!(dec.accrued_through, ymd(2023, 12, 31));
        let jan = accrue(&l, ymd(2024, 1, 3)).unwrap();
        assert_eq!(jan.settle_month, ymd(2024, 1, 1));
        assert_eq!(jan.overdue_days, 3);
        assert_eq!(jan.amount_cents, 150);
        // The December fine is final on Jan 1 (and already on Dec 31); January's is not.
        assert!(is_final(ymd(2023, 12, 1), None, ymd(2023, 12, 31)));
        assert!(!is_final(ymd(2024, 1, 1), None, ymd(2024, 1, 3)));
        // December seen from January only counts December's days.
        assert_eq!(fine_for_month(&l, ymd(2023, 12, 1), ymd(2024, 1, 3)), Some(dec));
    }

    #[test]
    fn returned_on_due_date_owes_nothing() {
        let due = ymd(2024, 3, 10);
        let l = loan(ymd(2024, 3, 1), due, Some(due), 50);
        for d in ymd(2024, 3, 1).iter_days().take(60) {
            assert_eq!(accrue(&l, d), None, "as of {d}");
        }
        assert_eq!(final_fine(&l, due), None);
    }

    #[test]
    fn returned_day_after_due_owes_one_day() {
        let l = loan(ymd(2024, 3, 1), ymd(2024, 3, 10), Some(ymd(2024, 3, 11)), 50);
        assert_eq!(accrue(&l, ymd(2024, 3, 10)), None);
        let f = accrue(&l, ymd(2024, 3, 20)).unwrap();
        assert_eq!(f.overdue_days, 1);
        assert_eq!(f.amount_cents, 50);
        assert_eq!(f.accrued_through, ymd(2024, 3, 11));
        assert!(is_final(f.settle_month, l.returned_on, ymd(2024, 3, 11)));
        assert!(!is_final(f.settle_month, l.returned_on, ymd(2024, 3, 10)));
        assert_eq!(final_fine(&l, ymd(2024, 3, 1)), Some(f));
    }

    #[test]
    fn returned_months_later_accrues_each_month() {
        let l = loan(ymd(2024, 1, 10), ymd(2024, 1, 31), Some(ymd(2024, 4, 5)), 10);
        assert_eq!(final_fine(&l, ymd(2024, 1, 1)), None);
        assert_eq!(final_fine(&l, ymd(2024, 2, 1)).unwrap().amount_cents, 290);
        assert_eq!(final_fine(&l, ymd(2024, 3, 1)).unwrap().overdue_days, 31);
        let apr = final_fine(&l, ymd(2024, 4, 1)).unwrap();
        assert_eq!((apr.overdue_days, apr.accrued_through), (5, ymd(2024, 4, 5)));
        assert_eq!(final_fine(&l, ymd(2024, 5, 1)), None);
    }

    #[test]
    fn zero_daily_fine_still_records_days() {
        let l = loan(ymd(2024, 1, 1), ymd(2024, 1, 2), None, 0);
        let f = accrue(&l, ymd(2024, 1, 5)).unwrap();
        assert_eq!((f.overdue_days, f.amount_cents), (3, 0));
    }

    #[test]
    fn max_daily_fine_over_a_full_month_fits() {
        let l = loan(ymd(2024, 1, 1), ymd(2024, 2, 29), None, MAX_DAILY_FINE_CENTS);
        let f = final_fine(&l, ymd(2024, 3, 1)).unwrap();
        assert_eq!(f.amount_cents, 31 * MAX_DAILY_FINE_CENTS);
    }

    #[test]
    fn overflow_is_reported_not_wrapped() {
        let l = loan(ymd(2024, 1, 1), ymd(2024, 1, 1), None, i64::MAX / 2);
        assert_eq!(
            try_fine_for_month(&l, ymd(2024, 1, 1), ymd(2024, 1, 4)),
            Err(FineOverflow {
                overdue_days: 3,
                daily_fine_cents: i64::MAX / 2
            })
        );
        assert!(std::panic::catch_unwind(|| accrue(&l, ymd(2024, 1, 4))).is_err());
    }

    #[test]
    fn as_of_before_the_month_counts_nothing() {
        let l = loan(ymd(2024, 1, 1), ymd(2024, 1, 2), None, 50);
        assert_eq!(fine_for_month(&l, ymd(2024, 2, 1), ymd(2024, 1, 31)), None);
    }

    proptest! {
        #[test]
        fn accrue_matches_oracle((l, as_of) in arb_loan_and_date()) {
            prop_assert_eq!(accrue(&l, as_of), oracle_fine(&l, as_of, as_of));
        }

        #[test]
        fn fine_for_any_month_matches_oracle(
            (l, as_of) in arb_loan_and_date(),
            month_off in -40i64..900,
        ) {
            let month = l.borrowed_on + Duration::days(month_off);
            prop_assert_eq!(fine_for_month(&l, month, as_of), oracle_fine(&l, month, as_of));
        }

        #[test]
        fn final_fine_is_fine_at_month_end(l in arb_loan(), month_off in -40i64..900) {
            let month = l.borrowed_on + Duration::days(month_off);
            let at_end = fine_for_month(&l, month, month_end(month));
            prop_assert_eq!(final_fine(&l, month), at_end);
            prop_assert_eq!(final_fine(&l, month), oracle_fine(&l, month, month_end(month)));
        }

        /// Once final, the fine as of any later date equals the amount it settles at, so
        /// settling on the day it became final never under- or over-charges.
        #[test]
        fn final_means_the_amount_is_fixed(
            (l, on) in arb_loan_and_date(),
            month_off in -40i64..900,
            later in 0i64..400,
        ) {
            let month = l.borrowed_on + Duration::days(month_off);
            if is_final(month, l.returned_on, on) {
                let fin = final_fine(&l, month);
                prop_assert_eq!(fine_for_month(&l, month, on), fin);
                prop_assert_eq!(fine_for_month(&l, month, on + Duration::days(later)), fin);
            }
        }

        #[test]
        fn accrue_never_decreases_within_a_month(
            (l, a) in arb_loan_and_date(),
            step in 0i64..31,
        ) {
            let b = (a + Duration::days(step)).min(month_end(a));
            let (fa, fb) = (accrue(&l, a), accrue(&l, b));
            if let Some(fa) = fa {
                let fb = fb.expect("a fine never disappears later in its month");
                prop_assert_eq!(fb.settle_month, fa.settle_month);
                prop_assert!(fb.overdue_days >= fa.overdue_days);
                prop_assert!(fb.amount_cents >= fa.amount_cents);
                prop_assert!(fb.accrued_through >= fa.accrued_through);
            }
        }

        /// Model of the job's upsert (keep the row with the later `accrued_through`, never move
        /// it backwards): any order of dates within a month ends at the in-order result.
        #[test]
        fn out_of_order_runs_converge(
            (l, base) in arb_loan_and_date(),
            offsets in proptest::collection::vec(0u32..31, 1..10),
        ) {
            let first = month_start(base);
            let last = month_end(base);
            let dates: Vec<NaiveDate> = offsets
                .iter()
                .map(|o| (first + Duration::days(i64::from(*o))).min(last))
                .collect();
            let upsert = |row: Option<MonthlyFine>, d: NaiveDate| match (row, accrue(&l, d)) {
                (Some(old), Some(new)) if new.accrued_through < old.accrued_through => {
                    // A lower date never overtakes: it is field-wise <= the stored row.
                    assert!(new.overdue_days <= old.overdue_days);
                    assert!(new.amount_cents <= old.amount_cents);
                    Some(old)
                }
                (old, None) => old,
                (_, new) => new,
            };
            let out_of_order = dates.iter().fold(None, |row, d| upsert(row, *d));
            let mut sorted = dates.clone();
            sorted.sort();
            let in_order = sorted.iter().fold(None, |row, d| upsert(row, *d));
            prop_assert_eq!(out_of_order, in_order);
            prop_assert_eq!(in_order, accrue(&l, *sorted.last().unwrap()));
        }

        #[test]
        fn is_final_is_monotone_in_on(
            month in crate::domain::testutil::arb_date(),
            returned in proptest::option::of(crate::domain::testutil::arb_date()),
            on in crate::domain::testutil::arb_date(),
            later in 0i64..400,
        ) {
            if is_final(month, returned, on) {
                prop_assert!(is_final(month, returned, on + Duration::days(later)));
            }
            // And it does not depend on which day of the month names the fine.
            prop_assert_eq!(is_final(month, returned, on), is_final(month_start(month), returned, on));
        }
    }
}

//! Test-only helpers shared by the domain tests: date shorthands, a generator of realistic and
//! edge-case loans, and the day-by-day brute-force oracle the closed-form rules are checked
//! against.

use std::collections::BTreeMap;

use chrono::{Duration, NaiveDate};
use proptest::prelude::*;

use super::calendar::{month_end, month_start};
use super::fine::{MAX_DAILY_FINE_CENTS, MonthlyFine};
use super::loan::LoanTerms;

pub fn ymd(y: i32, m: u32, d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(y, m, d).unwrap()
}

/// First and last day loans are borrowed on: 2019-2030 spans the leap years 2020, 2024, 2028.
pub fn first_day() -> NaiveDate {
    ymd(2019, 1, 1)
}

pub fn span_days() -> i64 {
    (ymd(2030, 12, 31) - first_day()).num_days()
}

/// Any date in 2019-2030.
pub fn arb_date() -> impl Strategy<Value = NaiveDate> {
    (0..=span_days()).prop_map(|o| first_day() + Duration::days(o))
}

/// Loans borrowed in 2019-2030 with the shapes that matter: due the day borrowed, due a few
/// weeks later, due at a month end (including Feb 28/29 and Dec 31); open, returned the day
/// borrowed, early, on the due date, the day after, shortly after, or months later.
pub fn arb_loan() -> impl Strategy<Value = LoanTerms> {
    let due_kind = 0u8..3;
    let ret_kind = 0u8..7;
    let daily = prop_oneof![
        4 => 1i64..=1_000,
        1 => Just(0i64),
        1 => Just(MAX_DAILY_FINE_CENTS),
        1 => 0i64..=MAX_DAILY_FINE_CENTS,
    ];
    (0..=span_days(), due_kind, 0i64..90, ret_kind, 0i64..800, daily).prop_map(
        |(b_off, due_kind, due_off, ret_kind, ret_off, daily)| {
            let borrowed_on = first_day() + Duration::days(b_off);
            let due_on = match due_kind {
                0 => borrowed_on,
                1 => borrowed_on + Duration::days(due_off),
                _ => month_end(borrowed_on + Duration::days(due_off)),
            };
            let returned_on = match ret_kind {
                0 => None,
                1 => Some(borrowed_on),
                2 => Some(due_on),
                3 => Some(due_on + Duration::days(1)),
                4 => Some(due_on + Duration::days(ret_off % 10)),
                5 => Some((due_on - Duration::days(ret_off % 20)).max(borrowed_on)),
                _ => Some(borrowed_on + Duration::days(ret_off)),
            };
            LoanTerms {
                borrowed_on,
                due_on,
                returned_on,
                daily_fine_cents: daily,
            }
        },
    )
}

/// A loan plus an `as_of` from a little before it was borrowed to a few years after.
pub fn arb_loan_and_date() -> impl Strategy<Value = (LoanTerms, NaiveDate)> {
    (arb_loan(), -10i64..1_000).prop_map(|(l, off)| (l, l.borrowed_on + Duration::days(off)))
}

/// Brute force: walk every day from `borrowed_on` to `as_of`, keep the overdue ones, group them
/// by month. Returns the overdue-day count per `settle_month`.
pub fn oracle_days_by_month(loan: &LoanTerms, as_of: NaiveDate) -> BTreeMap<NaiveDate, i32> {
    let mut by_month = BTreeMap::new();
    for d in loan.borrowed_on.iter_days().take_while(|d| *d <= as_of) {
        if loan.is_overdue_day(d) {
            *by_month.entry(month_start(d)).or_insert(0) += 1;
        }
    }
    by_month
}

/// The oracle's fine for `settle_month` as of `as_of`.
pub fn oracle_fine(loan: &LoanTerms, settle_month: NaiveDate, as_of: NaiveDate) -> Option<MonthlyFine> {
    let month = month_start(settle_month);
    let days = *oracle_days_by_month(loan, as_of).get(&month)?;
    let mut accrued_through = as_of.min(month_end(month));
    if let Some(r) = loan.returned_on {
        accrued_through = accrued_through.min(r);
    }
    Some(MonthlyFine {
        settle_month: month,
        overdue_days: days,
        amount_cents: i64::from(days) * loan.daily_fine_cents,
        accrued_through,
    })
}

//! Calendar arithmetic on business dates.
//!
//! Fines are grouped by calendar month (`settle_month` is the first day of the month) and a
//! business date is the local date in the configured business zone. Keeping these few helpers in
//! one place means every module agrees on what "month of d" and "today" mean.

use chrono::{DateTime, Datelike, NaiveDate, Utc};
use chrono_tz::Tz;

/// The first day of `d`'s month: the canonical `settle_month` key of a fine.
pub fn month_start(d: NaiveDate) -> NaiveDate {
    // Day 1 exists in every month, so this cannot fail.
    d.with_day(1).expect("day 1 exists in every month")
}

/// The last day of `d`'s month, leap years included (2024-02 ends on the 29th, 2100-02 on the
/// 28th).
///
/// Computed from `num_days_in_month` rather than "first of next month minus one" so that it also
/// works in the last month chrono can represent.
pub fn month_end(d: NaiveDate) -> NaiveDate {
    d.with_day(u32::from(d.num_days_in_month()))
        .expect("num_days_in_month is a valid day of the month")
}

/// The business date (local calendar date in `tz`) of the instant `at`.
///
/// The caller supplies the instant: the domain never reads a clock, so every rule stays a pure
/// function that tests can drive with any date, DST switch or time zone.
pub fn business_date(at: DateTime<Utc>, tz: Tz) -> NaiveDate {
    at.with_timezone(&tz).date_naive()
}

/// Whether `a` and `b` lie in the same calendar month.
pub fn same_month(a: NaiveDate, b: NaiveDate) -> bool {
    a.year() == b.year() && a.month() == b.month()
}

/// A month written `YYYY-MM` (years 0001 to 9999), as its first day; `None` for anything else.
///
/// Strict on purpose, like the API's dates: `2026-3`, `2026-03-01` or `+2026-03` are refused
/// rather than guessed at, so an operator's typo never audits another month.
pub fn parse_month(text: &str) -> Option<NaiveDate> {
    let shape_ok = text.len() == 7
        && text
            .bytes()
            .enumerate()
            .all(|(i, b)| if i == 4 { b == b'-' } else { b.is_ascii_digit() });
    if !shape_ok {
        return None;
    }
    let year: i32 = text[..4].parse().ok()?;
    let month: u32 = text[5..].parse().ok()?;
    NaiveDate::from_ymd_opt(year, month, 1).filter(|d| d.year() >= 1)
}

/// The `YYYY-MM` spelling of `d`'s month, the inverse of [`parse_month`].
pub fn format_month(d: NaiveDate) -> String {
    d.format("%Y-%m").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use proptest::prelude::*;

    fn ymd(y: i32, m: u32, d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, d).unwrap()
    }

    #[test]
    fn month_end_handles_leap_years() {
        assert_eq!(month_end(ymd(2024, 2, 10)), ymd(2024, 2, 29));
        assert_eq!(month_end(ymd(2023, 2, 10)), ymd(2023, 2, 28));
        assert_eq!(month_end(ymd(2000, 2, 1)), ymd(2000, 2, 29));
        assert_eq!(month_end(ymd(2100, 2, 1)), ymd(2100, 2, 28));
        assert_eq!(month_end(ymd(2024, 12, 31)), ymd(2024, 12, 31));
        assert_eq!(month_end(ymd(2024, 4, 1)), ymd(2024, 4, 30));
    }

    #[test]
    fn month_bounds_at_the_edges_of_chrono() {
        assert_eq!(month_end(NaiveDate::MAX), NaiveDate::MAX);
        assert_eq!(month_start(NaiveDate::MIN), NaiveDate::MIN);
        assert_eq!(month_start(ymd(2024, 12, 31)), ymd(2024, 12, 1));
    }

    #[test]
    fn business_date_uses_the_local_calendar() {
        // 2024-03-31T16:30Z is 2024-04-01 00:30 in Shanghai (UTC+8) but still March in UTC.
        let at = Utc.with_ymd_and_hms(2024, 3, 31, 16, 30, 0).unwrap();
        assert_eq!(business_date(at, chrono_tz::Asia::Shanghai), ymd(2024, 4, 1));
        assert_eq!(business_date(at, chrono_tz::UTC), ymd(2024, 3, 31));
        // 2024-01-01T04:00Z is still 2023-12-31 in New York: a year change.
        let at = Utc.with_ymd_and_hms(2024, 1, 1, 4, 0, 0).unwrap();
        assert_eq!(business_date(at, chrono_tz::America::New_York), ymd(2023, 12, 31));
    }

    #[test]
    fn same_month_compares_year_too() {
        assert!(same_month(ymd(2024, 2, 1), ymd(2024, 2, 29)));
        assert!(!same_month(ymd(2023, 2, 1), ymd(2024, 2, 1)));
        assert!(!same_month(ymd(2023, 12, 31), ymd(2024, 1, 1)));
    }

    #[test]
    fn months_are_strictly_yyyy_mm() {
        assert_eq!(parse_month("2026-03"), Some(ymd(2026, 3, 1)));
        assert_eq!(parse_month("0001-12"), Some(ymd(1, 12, 1)));
        assert_eq!(format_month(ymd(2026, 3, 31)), "2026-03");
        for bad in [
            "2026-3",
            "2026-13",
            "2026-00",
            "0000-01",
            "2026-03-01",
            "+202-03",
            "2026/03",
            " 2026-03",
            "",
            "2026-0a",
        ] {
            assert_eq!(parse_month(bad), None, "{bad:?}");
        }
    }

    proptest! {
        #[test]
        fn month_bounds_bracket_the_date(days in 0i64..(366 * 12)) {
            let d = ymd(2019, 1, 1) + chrono::Duration::days(days);
            let (s, e) = (month_start(d), month_end(d));
            prop_assert!(s <= d && d <= e);
            prop_assert_eq!(s.day(), 1);
            prop_assert!(same_month(s, e));
            // The day after month_end is the first of the next month.
            prop_assert_eq!(e.succ_opt().unwrap().day(), 1);
        }
    }
}

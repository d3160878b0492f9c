//! Which business dates one fire of the settlement job processes.
//!
//! The job never assumes it ran yesterday: it resumes from its last SUCCESS, so a fire that was
//! missed (outage, deploy, every replica down) is caught up by the next one. The per-fire cap
//! bounds how long one fire can hold the lock; the remainder is picked up by the next fire.

use chrono::{Days, NaiveDate};

/// The business dates one fire settles: from the day after `last_success` (or from `start_date`,
/// or from `target` when both are None) through `target`, oldest first, at most `max_days`.
/// Empty when already up to date (last_success >= target). If start_date > target: empty.
///
/// `last_success` wins over `start_date`: once the job has succeeded, its history, not the
/// configuration, decides where to resume. `max_days == 0` yields nothing.
pub fn dates_to_settle(
    last_success: Option<NaiveDate>,
    start_date: Option<NaiveDate>,
    target: NaiveDate,
    max_days: u32,
) -> Vec<NaiveDate> {
    let first = match (last_success, start_date) {
        // succ_opt is None only at NaiveDate::MAX, which is necessarily >= target.
        (Some(last), _) => match last.succ_opt() {
            Some(d) => d,
            None => return Vec::new(),
        },
        (None, Some(start)) => start,
        (None, None) => target,
    };
    if first > target || max_days == 0 {
        return Vec::new();
    }
    // Last date of this fire: target, or earlier when the cap cuts the range short.
    let capped = first
        .checked_add_days(Days::new(u64::from(max_days) - 1))
        .unwrap_or(NaiveDate::MAX);
    let last = capped.min(target);
    // Not `iter_days`: it never yields `NaiveDate::MAX`.
    std::iter::successors(Some(first), |d| d.succ_opt().filter(|n| *n <= last)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::testutil::{arb_date, ymd};
    use chrono::Duration;
    use proptest::prelude::*;

    #[test]
    fn up_to_date_is_empty() {
        let t = ymd(2024, 3, 10);
        assert!(dates_to_settle(Some(t), None, t, 62).is_empty());
        assert!(dates_to_settle(Some(ymd(2024, 3, 11)), None, t, 62).is_empty());
    }

    #[test]
    fn resumes_after_last_success() {
        let got = dates_to_settle(Some(ymd(2024, 2, 27)), None, ymd(2024, 3, 1), 62);
        assert_eq!(got, [ymd(2024, 2, 28), ymd(2024, 2, 29), ymd(2024, 3, 1)]);
    }

    #[test]
    fn last_success_wins_over_start_date() {
        let got = dates_to_settle(Some(ymd(2024, 3, 8)), Some(ymd(2024, 1, 1)), ymd(2024, 3, 10), 62);
        assert_eq!(got, [ymd(2024, 3, 9), ymd(2024, 3, 10)]);
    }

    #[test]
    fn first_run_uses_start_date_or_target() {
        let t = ymd(2024, 1, 2);
        assert_eq!(
            dates_to_settle(None, Some(ymd(2023, 12, 31)), t, 62),
            [ymd(2023, 12, 31), ymd(2024, 1, 1), t]
        );
        assert_eq!(dates_to_settle(None, None, t, 62), [t]);
        assert!(dates_to_settle(None, Some(ymd(2024, 1, 3)), t, 62).is_empty());
    }

    #[test]
    fn cap_leaves_the_rest_for_the_next_fire() {
        let t = ymd(2024, 12, 31);
        let first = dates_to_settle(None, Some(ymd(2024, 1, 1)), t, 62);
        assert_eq!(first.len(), 62);
        assert_eq!(first[61], ymd(2024, 3, 2)); // 31 + 29 + 2 days: leap year
        let next = dates_to_settle(first.last().copied(), Some(ymd(2024, 1, 1)), t, 62);
        assert_eq!(next[0], ymd(2024, 3, 3));
        assert!(dates_to_settle(None, None, t, 0).is_empty());
    }

    #[test]
    fn extreme_dates_do_not_overflow() {
        assert!(dates_to_settle(Some(NaiveDate::MAX), None, NaiveDate::MAX, 62).is_empty());
        let near_max = NaiveDate::MAX - Duration::days(1);
        assert_eq!(
            dates_to_settle(Some(near_max), None, NaiveDate::MAX, u32::MAX),
            [NaiveDate::MAX]
        );
    }

    proptest! {
        #[test]
        fn dates_are_a_bounded_contiguous_run(
            last in proptest::option::of(arb_date()),
            start in proptest::option::of(arb_date()),
            target in arb_date(),
            max_days in 0u32..100,
        ) {
            let got = dates_to_settle(last, start, target, max_days);
            prop_assert!(got.len() <= max_days as usize);
            for w in got.windows(2) {
                prop_assert_eq!(w[1], w[0] + Duration::days(1));
            }
            if let (Some(first), Some(end)) = (got.first(), got.last()) {
                prop_assert!(*end <= target);
                match (last, start) {
                    (Some(l), _) => prop_assert_eq!(*first, l + Duration::days(1)),
                    (None, Some(s)) => prop_assert_eq!(*first, s),
                    (None, None) => prop_assert_eq!(*first, target),
                }
                // Either it reached the target or it stopped at the cap.
                prop_assert!(*end == target || got.len() == max_days as usize);
            } else {
                // Empty only when up to date, not yet started, or capped at zero.
                let from = last.map(|l| l + Duration::days(1)).or(start).unwrap_or(target);
                prop_assert!(from > target || max_days == 0);
            }
        }

        /// Repeated fires with no new target eventually reach it, never re-settling a date.
        #[test]
        fn successive_fires_cover_every_date_once(
            last in proptest::option::of(arb_date()),
            target in arb_date(),
            max_days in 1u32..40,
        ) {
            let mut done = last;
            let mut seen = Vec::new();
            for _ in 0..200 {
                let batch = dates_to_settle(done, None, target, max_days);
                if batch.is_empty() {
                    break;
                }
                done = batch.last().copied();
                seen.extend(batch);
            }
            if let Some(l) = last.filter(|l| *l < target) {
                let expected: Vec<_> = (l + Duration::days(1))
                    .iter_days()
                    .take_while(|d| *d <= target)
                    .collect();
                if expected.len() <= 200 * max_days as usize {
                    prop_assert_eq!(seen, expected);
                }
            }
        }
    }
}

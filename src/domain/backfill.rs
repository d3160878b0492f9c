//! Which business dates one run of the settlement job processes.
//!
//! The job never assumes it ran yesterday, nor that the dates before its last SUCCESS are all
//! settled: an operator may have run a later date by hand, or a date may have failed while later
//! ones succeeded. So a run settles every date from the start date through its target that has
//! no SUCCESS, oldest first: a gap behind a later SUCCESS is filled by the next run, never left
//! for good. The search for those dates is one query (`store::executions::unsettled_between`);
//! the rules that decide what to ask it, and what to do with its answer, are here.

use chrono::NaiveDate;

/// A date an operator asked for lies before the job's start date: months before the start month
/// are never accrued (CONTRACT §1), so such a date cannot be settled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{requested} is before {start}, the earliest date the job settles")]
pub struct BeforeStart {
    pub requested: NaiveDate,
    pub start: NaiveDate,
}

/// How far back the first plan ever may reach when no start date is configured: it records the
/// start date, and every later run settles every date from there. `0001-01-01` typed by mistake
/// would leave the job seven hundred thousand dates to settle. Ten years is any library's horizon;
/// `FINESETTLE_SETTLE_START_DATE` reaches further on purpose.
pub const FIRST_START_MAX_DAYS: u64 = 3660;

/// Refuses a first plan ever (no start date configured or recorded) of `first_requested` when it
/// lies more than [`FIRST_START_MAX_DAYS`] before `today`.
pub fn check_first_start(today: NaiveDate, first_requested: NaiveDate) -> Result<(), BeforeStart> {
    let earliest = today
        .checked_sub_days(chrono::Days::new(FIRST_START_MAX_DAYS))
        .unwrap_or(NaiveDate::MIN);
    check_not_before_start(earliest, first_requested)
}

/// The first date a run may look at: `start` itself, unless the operator's first requested date
/// lies before it.
pub fn check_not_before_start(start: NaiveDate, first_requested: NaiveDate) -> Result<(), BeforeStart> {
    if first_requested < start {
        return Err(BeforeStart {
            requested: first_requested,
            start,
        });
    }
    Ok(())
}

/// Why an operator's range of dates cannot be run, whatever is settled already.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RangeError {
    /// The last date has not ended: `today` is the database's business date.
    #[error("{to} has not ended yet (today is {today})")]
    NotEnded { to: NaiveDate, today: NaiveDate },
    /// `from` is after `to`.
    #[error("{from} is after {to}")]
    Reversed { from: NaiveDate, to: NaiveDate },
    /// More dates than `FINESETTLE_BACKFILL_MAX_DAYS`: one run holds the lock for all of them.
    #[error("the range has {days} dates; at most {max}")]
    TooLong { days: i64, max: u32 },
}

/// The dates of an operator's range `from..=to`, checked against the rules that need no look at
/// the records: every date has ended by `today` (the database's business date), `from` is not
/// after `to`, and the range spans at most `max_days` dates. Checked in that order.
pub fn manual_range(
    from: NaiveDate,
    to: NaiveDate,
    today: NaiveDate,
    max_days: u32,
) -> Result<Vec<NaiveDate>, RangeError> {
    if to >= today {
        return Err(RangeError::NotEnded { to, today });
    }
    if from > to {
        return Err(RangeError::Reversed { from, to });
    }
    let days = (to - from).num_days() + 1;
    if days > i64::from(max_days) {
        return Err(RangeError::TooLong { days, max: max_days });
    }
    Ok(from.iter_days().take_while(|date| *date <= to).collect())
}

/// The dates an operator's run (or backfill) settles, given `unsettled`: every date without
/// SUCCESS from the start date through the last requested date, oldest first.
///
/// - Nothing when every requested date is settled already: there is nothing to run.
/// - Otherwise the requested dates without SUCCESS, preceded by every earlier date without
///   SUCCESS: a date settled after a gap would finalise months whose earlier days were never
///   accrued, so the gap is settled first, in the same run (the README documents this choice).
pub fn manual_dates(unsettled: &[NaiveDate], requested: &[NaiveDate]) -> Vec<NaiveDate> {
    let Some(&first) = requested.iter().min() else {
        return Vec::new();
    };
    if !unsettled.iter().any(|d| requested.contains(d)) {
        return Vec::new();
    }
    unsettled
        .iter()
        .copied()
        .filter(|d| *d < first || requested.contains(d))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::testutil::{arb_date, ymd};
    use chrono::Duration;
    use proptest::prelude::*;

    #[test]
    fn an_operators_range_has_ended_is_in_order_and_is_not_too_long() {
        let today = ymd(2026, 3, 10);
        assert_eq!(
            manual_range(ymd(2026, 3, 7), ymd(2026, 3, 9), today, 3),
            Ok(vec![ymd(2026, 3, 7), ymd(2026, 3, 8), ymd(2026, 3, 9)])
        );
        assert_eq!(
            manual_range(ymd(2026, 3, 9), ymd(2026, 3, 9), today, 1),
            Ok(vec![ymd(2026, 3, 9)])
        );
        assert_eq!(
            manual_range(ymd(2026, 3, 9), today, today, 5),
            Err(RangeError::NotEnded { to: today, today })
        );
        assert_eq!(
            manual_range(ymd(2026, 3, 9), ymd(2026, 3, 8), today, 5),
            Err(RangeError::Reversed {
                from: ymd(2026, 3, 9),
                to: ymd(2026, 3, 8)
            })
        );
        assert_eq!(
            manual_range(ymd(2026, 3, 6), ymd(2026, 3, 9), today, 3),
            Err(RangeError::TooLong { days: 4, max: 3 })
        );
        // A date not ended is named first, as the API always did.
        assert!(matches!(
            manual_range(ymd(2027, 1, 1), today, today, 1),
            Err(RangeError::NotEnded { .. })
        ));
    }

    #[test]
    fn a_date_before_the_start_is_refused() {
        let start = ymd(2026, 3, 1);
        assert_eq!(check_not_before_start(start, start), Ok(()));
        assert_eq!(check_not_before_start(start, ymd(2026, 3, 9)), Ok(()));
        let err = check_not_before_start(start, ymd(2026, 2, 28)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "2026-02-28 is before 2026-03-01, the earliest date the job settles"
        );
    }

    #[test]
    fn a_first_plan_reaches_back_ten_years_at_most() {
        let today = ymd(2026, 12, 3);
        assert_eq!(check_first_start(today, ymd(2016, 11, 25)), Ok(()));
        assert_eq!(check_first_start(today, ymd(2026, 12, 2)), Ok(()));
        let err = check_first_start(today, ymd(1, 1, 1)).unwrap_err();
        assert_eq!(err.start, ymd(2016, 11, 25));
        assert!(check_first_start(today, ymd(2016, 11, 24)).is_err());
    }

    #[test]
    fn settled_requests_need_no_run() {
        let unsettled = [ymd(2026, 3, 2), ymd(2026, 3, 3)];
        assert!(manual_dates(&unsettled, &[ymd(2026, 3, 5)]).is_empty());
        assert!(manual_dates(&unsettled, &[]).is_empty());
    }

    #[test]
    fn earlier_gaps_come_first() {
        // Settled through 03-01 and on 03-04; the operator asks for 03-06.
        let unsettled = [ymd(2026, 3, 2), ymd(2026, 3, 3), ymd(2026, 3, 5), ymd(2026, 3, 6)];
        assert_eq!(manual_dates(&unsettled, &[ymd(2026, 3, 6)]), unsettled);
    }

    #[test]
    fn a_backfill_keeps_its_own_dates_and_the_gaps_before_them() {
        let unsettled = [ymd(2026, 3, 2), ymd(2026, 3, 5), ymd(2026, 3, 6), ymd(2026, 3, 7)];
        let requested = [ymd(2026, 3, 5), ymd(2026, 3, 6)];
        assert_eq!(
            manual_dates(&unsettled, &requested),
            [ymd(2026, 3, 2), ymd(2026, 3, 5), ymd(2026, 3, 6)]
        );
    }

    proptest! {
        /// Whatever is settled, an operator's run leaves no date without SUCCESS before the last
        /// date it settles, and settles nothing it was not asked for beyond the gaps before it.
        #[test]
        fn a_manual_run_leaves_no_gap_behind_it(
            start in arb_date(),
            settled_mask in proptest::collection::vec(any::<bool>(), 1..60),
            first in 0usize..60,
            len in 1usize..10,
        ) {
            let days: Vec<NaiveDate> = (0..settled_mask.len()).map(|i| start + Duration::days(i as i64)).collect();
            let first = first.min(days.len() - 1);
            let requested: Vec<NaiveDate> = days[first..(first + len).min(days.len())].to_vec();
            let last = *requested.last().unwrap();
            let unsettled: Vec<NaiveDate> = days
                .iter()
                .zip(&settled_mask)
                .filter(|(d, settled)| !**settled && **d <= last)
                .map(|(d, _)| *d)
                .collect();
            let run = manual_dates(&unsettled, &requested);
            if run.is_empty() {
                prop_assert!(requested.iter().all(|d| !unsettled.contains(d)));
            } else {
                let end = *run.last().unwrap();
                // every unsettled date up to the end of the run is in it
                prop_assert!(unsettled.iter().filter(|d| **d <= end).all(|d| run.contains(d)));
                // and nothing after the requested ones, nothing settled
                prop_assert!(run.iter().all(|d| unsettled.contains(d) && *d <= last));
                prop_assert!(run.windows(2).all(|w| w[0] < w[1]));
            }
        }
    }
}

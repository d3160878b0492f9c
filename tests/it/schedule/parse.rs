//! Parsing, the production schedule (02:00 in Shanghai) and the date a fire settles.

use chrono::{Duration, NaiveDate};
use chrono_tz::America::New_York;
use chrono_tz::Asia::Shanghai;
use finesettle::schedule::{CronSchedule, ScheduleError, settle_target};

use super::{assert_next_after, assert_upcoming, local, sched, utc};

#[test]
fn parses_six_and_seven_fields() {
    let s = sched("0  0 2 * * *", Shanghai);
    assert_eq!(s.expr(), "0 0 2 * * *");
    assert_eq!(s.tz(), Shanghai);
    assert_eq!(s.to_string(), "0 0 2 * * * (Asia/Shanghai)");
    let y = sched("0 0 2 * * * 2030", Shanghai);
    assert_next_after(&y, &[("2026-06-01T00:00:00Z", "2029-12-31T18:00:00Z")]);
}

#[test]
fn rejects_five_fields_with_a_clear_message() {
    let err = CronSchedule::parse("0 2 * * *", Shanghai).unwrap_err();
    assert!(matches!(err, ScheduleError::FiveFields { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("five fields"), "{msg}");
    assert!(msg.contains("seconds first"), "{msg}");
}

#[test]
fn rejects_other_field_counts_and_bad_fields() {
    for bad in ["", "@daily", "* * * *", "0 0 0 * * * 2030 1"] {
        let err = CronSchedule::parse(bad, Shanghai).unwrap_err();
        assert!(matches!(err, ScheduleError::FieldCount { .. }), "{bad:?}: {err:?}");
    }
    for bad in ["0 0 25 * * *", "0 61 2 * * *", "x 0 2 * * *", "0 0 2 * 13 *"] {
        let err = CronSchedule::parse(bad, Shanghai).unwrap_err();
        assert!(matches!(err, ScheduleError::Invalid { .. }), "{bad:?}: {err:?}");
    }
}

#[test]
fn rejects_expressions_that_never_match() {
    let err = CronSchedule::parse("0 0 0 30 2 *", Shanghai).unwrap_err();
    assert!(matches!(err, ScheduleError::NeverMatches { .. }), "{err:?}");
}

#[test]
fn classifies_wall_clock_and_interval_expressions() {
    for e in ["0 0 2 * * *", "0 30 1,13 * * *", "0 0 2 1 * MON", "00 00 02 * * * 2030"] {
        assert!(sched(e, New_York).is_wall_clock(), "{e}");
    }
    for e in ["*/1 * * * * *", "0 */20 1 * * *", "0 0 1-3 * * *", "0 0-59/30 2 * * *"] {
        assert!(!sched(e, New_York).is_wall_clock(), "{e}");
    }
}

#[test]
fn day_of_month_or_day_of_week() {
    // Classic cron: both restricted means either matches. 2026-06-01 is a Monday.
    let s = sched("0 0 12 15 * MON", chrono_tz::UTC);
    assert_upcoming(
        &s,
        "2026-05-31T00:00:00Z",
        &["2026-06-01T12:00:00Z", "2026-06-08T12:00:00Z", "2026-06-15T12:00:00Z"],
    );
}

#[test]
fn shanghai_two_am_is_eighteen_utc_once_a_day_for_400_days() {
    let s = sched("0 0 2 * * *", Shanghai);
    let start = utc("2026-01-01T00:00:00Z");
    let slots = s.upcoming(start, 400);
    assert_eq!(slots.len(), 400);
    assert_eq!(slots[0], utc("2026-01-01T18:00:00Z"));
    for (i, slot) in slots.iter().enumerate() {
        let expected = utc("2026-01-01T18:00:00Z") + Duration::days(i as i64);
        assert_eq!(*slot, expected, "slot {i}");
        let l = local(*slot, Shanghai);
        assert_eq!(l.time(), chrono::NaiveTime::from_hms_opt(2, 0, 0).unwrap());
        // Fires at 18:00 UTC of the day before its local date.
        assert_eq!(l.date(), slot.date_naive().succ_opt().unwrap());
    }
    // One local date per fire, consecutive: no double fire, no gap.
    for w in slots.windows(2) {
        assert_eq!(
            local(w[1], Shanghai).date(),
            local(w[0], Shanghai).date().succ_opt().unwrap()
        );
    }
    // The same 400 slots come out of slots_between and of repeated next_after.
    let last = *slots.last().unwrap();
    assert_eq!(s.slots_between(start, last, 10_000), slots);
    let mut cursor = start;
    for slot in &slots {
        cursor = s.next_after(cursor).unwrap();
        assert_eq!(cursor, *slot);
    }
}

#[test]
fn settle_target_is_the_previous_local_date() {
    let d = |s: &str| s.parse::<NaiveDate>().unwrap();
    // 02:00 Shanghai on 2026-03-02 is 18:00Z on 2026-03-01 and settles 2026-03-01.
    assert_eq!(settle_target(utc("2026-03-01T18:00:00Z"), Shanghai), d("2026-03-01"));
    assert_eq!(settle_target(utc("2026-01-01T15:59:59Z"), Shanghai), d("2025-12-31"));
    assert_eq!(settle_target(utc("2026-01-01T16:00:00Z"), Shanghai), d("2026-01-01"));
    // New York, the gap-day fire at 03:00 EDT still settles the previous date.
    assert_eq!(settle_target(utc("2026-03-08T07:00:00Z"), New_York), d("2026-03-07"));
    // Across a year boundary and a leap day.
    assert_eq!(settle_target(utc("2028-02-29T18:00:00Z"), Shanghai), d("2028-02-29"));
}

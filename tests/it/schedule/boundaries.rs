//! Strictness, sub-seconds, ranges and limits, and forward and backward searches agreeing.

use chrono::TimeDelta;
use chrono_tz::America::New_York;
use chrono_tz::Asia::Shanghai;

use super::{assert_latest_at_or_before, assert_next_after, local, sched, utc};

#[test]
fn next_after_is_strict_and_ignores_sub_seconds() {
    let s = sched("0 0 2 * * *", Shanghai);
    let slot = utc("2026-05-01T18:00:00Z");
    assert_eq!(s.next_after(slot), Some(utc("2026-05-02T18:00:00Z")));
    assert_eq!(s.next_after(slot - TimeDelta::nanoseconds(1)), Some(slot));
    assert_eq!(
        s.next_after(slot + TimeDelta::milliseconds(500)),
        Some(utc("2026-05-02T18:00:00Z"))
    );
    let every = sched("*/1 * * * * *", Shanghai);
    assert_next_after(&every, &[("2026-01-01T00:00:00.5Z", "2026-01-01T00:00:01Z")]);
}

#[test]
fn latest_at_or_before_boundaries() {
    let s = sched("0 0 2 * * *", Shanghai);
    let slot = utc("2026-05-01T18:00:00Z");
    assert_eq!(s.latest_at_or_before(slot), Some(slot));
    assert_eq!(s.latest_at_or_before(slot + TimeDelta::milliseconds(999)), Some(slot));
    assert_eq!(
        s.latest_at_or_before(slot - TimeDelta::seconds(1)),
        Some(utc("2026-04-30T18:00:00Z"))
    );
    assert_eq!(
        s.latest_at_or_before(slot - TimeDelta::nanoseconds(1)),
        Some(utc("2026-04-30T18:00:00Z"))
    );
    assert_eq!(s.latest_at_or_before(utc("2026-05-02T17:59:59Z")), Some(slot));
    // Sparse schedules are still found quickly, and "never before" is None.
    let leap = sched("0 0 12 29 2 *", chrono_tz::UTC);
    assert_latest_at_or_before(&leap, &[("2027-06-01T00:00:00Z", "2024-02-29T12:00:00Z")]);
    let future = sched("0 0 0 1 1 * 2030", Shanghai);
    assert_eq!(future.latest_at_or_before(utc("2026-01-01T00:00:00Z")), None);
    let past = sched("0 0 0 1 1 * 2020", Shanghai);
    assert_eq!(past.next_after(utc("2026-01-01T00:00:00Z")), None);
    assert!(past.upcoming(utc("2026-01-01T00:00:00Z"), 3).is_empty());
}

#[test]
fn slots_between_boundaries() {
    let s = sched("0 0 2 * * *", Shanghai);
    let a = utc("2026-05-01T18:00:00Z");
    let b = utc("2026-05-02T18:00:00Z");
    let c = utc("2026-05-03T18:00:00Z");
    // Exclusive start, inclusive end.
    assert!(s.slots_between(a, a, 10).is_empty());
    assert_eq!(s.slots_between(a - TimeDelta::seconds(1), a, 10), [a]);
    assert_eq!(s.slots_between(a, b, 10), [b]);
    assert_eq!(s.slots_between(a, c, 10), [b, c]);
    assert_eq!(s.slots_between(a - TimeDelta::seconds(1), c, 10), [a, b, c]);
    assert_eq!(s.slots_between(a, c - TimeDelta::seconds(1), 10), [b]);
    // Limit keeps the oldest.
    assert_eq!(s.slots_between(a - TimeDelta::seconds(1), c, 2), [a, b]);
    assert!(s.slots_between(a, c, 0).is_empty());
    // Empty and reversed ranges.
    assert!(s.slots_between(c, a, 10).is_empty());
}

#[test]
fn new_york_daily_fires_once_per_local_date_all_year() {
    for expr in ["0 30 1 * * *", "0 30 2 * * *", "0 0 2 * * *", "0 0 0 * * *"] {
        let s = sched(expr, New_York);
        let slots = s.upcoming(utc("2026-01-01T12:00:00Z"), 730);
        for w in slots.windows(2) {
            assert_eq!(
                local(w[1], New_York).date(),
                local(w[0], New_York).date().succ_opt().unwrap(),
                "{expr}: {} then {}",
                w[0],
                w[1]
            );
        }
    }
}

#[test]
fn forward_and_backward_searches_agree_over_a_year() {
    for expr in ["0 30 1 * * *", "0 30 2 * * *", "0 0,30 1,2 * * *", "0 */20 1,2 * * *"] {
        let s = sched(expr, New_York);
        let mut t = utc("2026-01-01T00:00:00Z");
        while t < utc("2027-01-01T00:00:00Z") {
            let next = s.next_after(t).unwrap();
            let latest = s.latest_at_or_before(t).unwrap();
            assert!(latest <= t && t < next, "{expr} at {t}");
            assert_eq!(s.next_after(latest), Some(next), "{expr} at {t}");
            assert_eq!(s.latest_at_or_before(next), Some(next), "{expr} at {t}");
            assert_eq!(
                s.latest_at_or_before(next - TimeDelta::seconds(1)),
                Some(latest),
                "{expr} at {t}"
            );
            t += TimeDelta::minutes(7 * 60 + 13);
        }
    }
}

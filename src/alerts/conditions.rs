//! The alert rules of CONTRACT §3, as pure functions of the records and an instant: no I/O, no clock.
//!
//! | kind | raised when |
//! |---|---|
//! | `FAILED` | an execution ended FAILED and no SUCCESS exists for that date |
//! | `TIMEOUT` | an execution has been RUNNING longer than the job timeout |
//! | `MISSED` | no SUCCESS for an expected business date (every date from the start date on) by its scheduled time + the grace |
//! | `CLOCK_SKEW` | a replica measured recently has a clock off from the database's by more than the limit |
//!
//! `AUDIT` alerts are not decided here: the audit (`crate::audit`) raises one when a month's
//! fines or ledger differ from a recomputation, and resolves it when a re-audit finds none. The
//! minute-by-minute evaluation never resolves them.
//!
//! "Expected" dates come from the start date and the schedule, not from the records, so a date
//! nothing ever attempted is still noticed, and so is a gap behind later SUCCESSes: every date
//! from the start date on is expected once its deadline has passed. A date's scheduled time is
//! the first slot of the cron (in the business zone) that settles it ([`settle_target`]); its
//! deadline is that slot + the grace, or the job's first registration + the grace when the slot
//! came before the service was deployed.
//!
//! A date has at most one SUCCESS and a SUCCESS is final, so "no later SUCCESS" and "no SUCCESS"
//! are the same question for FAILED — except for a failed re-run of an already settled date,
//! which leaves the date settled and needs nobody, so it raises nothing.

use std::time::Duration;

use crate::domain::alert::{AlertKind, NewAlert};
use crate::domain::business_date;
use crate::domain::replica_clock::ClockMeasurement;
use crate::schedule::{CronSchedule, settle_target};
use chrono::{DateTime, NaiveDate, NaiveTime, TimeDelta, Utc};
use chrono_tz::Tz;

/// Longest error text copied into an alert's detail: enough to recognise the failure, short
/// enough for a chat message. The execution record keeps the whole text.
const MAX_ERROR_CHARS: usize = 500;

/// FAILED: execution `execution_id` of `business_date` ended FAILED (the caller has checked that
/// the date has no SUCCESS).
pub fn failed(execution_id: i64, business_date: NaiveDate, error: Option<&str>) -> NewAlert {
    let error = error
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .unwrap_or("no error recorded");
    let mut shown: String = error.chars().take(MAX_ERROR_CHARS).collect();
    if shown.len() < error.len() {
        shown.push('…');
    }
    NewAlert {
        kind: AlertKind::Failed,
        business_date,
        detail: format!("execution {execution_id} failed and the date has no SUCCESS: {shown}"),
        execution_id: Some(execution_id),
    }
}

/// Executions started before this instant have been RUNNING longer than `timeout` at `at`.
pub fn timeout_cutoff(at: DateTime<Utc>, timeout: Duration) -> DateTime<Utc> {
    earlier_by(at, timeout)
}

/// `at` minus `span`, or the earliest instant there is when that is out of range.
fn earlier_by(at: DateTime<Utc>, span: Duration) -> DateTime<Utc> {
    TimeDelta::from_std(span)
        .ok()
        .and_then(|t| at.checked_sub_signed(t))
        .unwrap_or(DateTime::<Utc>::MIN_UTC)
}

/// TIMEOUT: execution `execution_id`, started at `started_at`, is still RUNNING past `timeout`.
pub fn timed_out(
    execution_id: i64,
    business_date: NaiveDate,
    started_at: DateTime<Utc>,
    timeout: Duration,
) -> NewAlert {
    NewAlert {
        kind: AlertKind::Timeout,
        business_date,
        detail: format!(
            "execution {execution_id} has been RUNNING since {} (job timeout {}); it is not cancelled",
            rfc3339(started_at),
            humantime::format_duration(timeout)
        ),
        execution_id: Some(execution_id),
    }
}

/// A business date the schedule expects settled, and by when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExpectedDate {
    pub business_date: NaiveDate,
    /// The date's scheduled time: the first slot that settles it.
    pub slot: DateTime<Utc>,
    /// A SUCCESS must exist by then: the slot + the grace, or the first registration + the grace
    /// when the slot came before it.
    pub deadline: DateTime<Utc>,
}

/// What MISSED knows of a task besides its schedule.
#[derive(Debug, Clone, Copy)]
pub struct Expectation {
    /// How long after its scheduled time a date may still be settled without an alert.
    pub grace: Duration,
    /// When a service first registered the job. A service cannot have missed a fire from before
    /// it was deployed: a date whose slot is earlier gets its grace from this instant, which
    /// leaves the first start's catch-up time to settle an old start date's history.
    pub first_seen_at: DateTime<Utc>,
    /// The start date in force: `FINESETTLE_SETTLE_START_DATE`, else the one the job's first
    /// plan recorded. `None` until the job plans a date: then the dates of the slots after
    /// `first_seen_at` are expected (the first of them is the date that plan will record).
    pub start_date: Option<NaiveDate>,
}

/// Every business date from `first` through `last` is expected settled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExpectedRange {
    pub first: NaiveDate,
    pub last: NaiveDate,
}

/// The dates whose deadline has passed at `at`: every date from the start date on, gaps behind
/// later SUCCESSes included, through the latest date whose deadline ≤ `at`. `None` when there is
/// none. Deadlines never decrease from one date to the next, so the expected dates are a range,
/// which the caller checks against the records in one set-based query.
pub fn expected_range(schedule: &CronSchedule, at: DateTime<Utc>, expectation: &Expectation) -> Option<ExpectedRange> {
    let grace = TimeDelta::from_std(expectation.grace).ok()?;
    let latest_due = at.checked_sub_signed(grace)?;
    // Every deadline is at least the first registration + the grace.
    if expectation.first_seen_at > latest_due {
        return None;
    }
    // A date is due once some slot that settles it is due: the latest due slot settles the
    // latest due date, and every earlier date has a slot no later than that one.
    let last = settle_target(schedule.latest_at_or_before(latest_due)?, schedule.tz());
    let first = match expectation.start_date {
        Some(start) => start,
        None => settle_target(schedule.next_after(expectation.first_seen_at)?, schedule.tz()),
    };
    (first <= last).then_some(ExpectedRange { first, last })
}

/// When `business_date` is due: its scheduled time and its deadline. `None` when the schedule
/// never settles it (no slot after it, e.g. a year field in the past).
pub fn expected_date(
    schedule: &CronSchedule,
    business_date: NaiveDate,
    expectation: &Expectation,
) -> Option<ExpectedDate> {
    let grace = TimeDelta::from_std(expectation.grace).ok()?;
    let slot = scheduled_time(schedule, business_date)?;
    let deadline = slot.max(expectation.first_seen_at).checked_add_signed(grace)?;
    Some(ExpectedDate {
        business_date,
        slot,
        deadline,
    })
}

/// How many slots past the start of the next day [`scheduled_time`] looks at; only a clock that
/// goes back across midnight makes it look past the first.
const MAX_SLOTS_PAST_MIDNIGHT: usize = 64;

/// The first slot `s` with `settle_target(s) ≥ date`: the first slot at or after the start of
/// the next day in the business zone (the 02:00 fire of D+1 settles D).
fn scheduled_time(schedule: &CronSchedule, date: NaiveDate) -> Option<DateTime<Utc>> {
    let next_day = start_of_day(date.succ_opt()?, schedule.tz())?;
    let mut slot = schedule.next_after(next_day - TimeDelta::seconds(1))?;
    for _ in 0..MAX_SLOTS_PAST_MIDNIGHT {
        if settle_target(slot, schedule.tz()) >= date {
            return Some(slot);
        }
        slot = schedule.next_after(slot)?;
    }
    None
}

/// The first instant whose local date in `tz` is `date` or later. Not simply local midnight: in
/// a few zones midnight does not exist on the day the clocks go forward (the day then starts at
/// 01:00), and a day can be skipped altogether (Samoa, 2011-12-30).
fn start_of_day(date: NaiveDate, tz: Tz) -> Option<DateTime<Utc>> {
    let local_date = |secs: i64| DateTime::from_timestamp(secs, 0).map(|t| t.with_timezone(&tz).date_naive());
    // Every UTC offset is well within a day, so a day before naive midnight (read as UTC) the
    // local date is earlier, and a day after it, it is not.
    let naive_midnight = date.and_time(NaiveTime::MIN).and_utc().timestamp();
    let (mut lo, mut hi) = (naive_midnight - 86_400, naive_midnight + 86_400);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if local_date(mid)? >= date {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    DateTime::from_timestamp(hi, 0)
}

/// MISSED: `expected` has no SUCCESS past its deadline. `attempts` is how many executions the
/// date has (of any status), to tell "never ran" from "ran and did not succeed".
pub fn missed(expected: &ExpectedDate, grace: Duration, attempts: i64) -> NewAlert {
    let history = match attempts {
        0 => "no execution was recorded for it".to_owned(),
        1 => "1 execution, none succeeded".to_owned(),
        n => format!("{n} executions, none succeeded"),
    };
    let grace_text = humantime::format_duration(grace);
    let counted_from = TimeDelta::from_std(grace)
        .ok()
        .and_then(|g| expected.deadline.checked_sub_signed(g))
        .unwrap_or(expected.slot);
    let why = if counted_from > expected.slot {
        format!(
            "its fire at {} came before the job's first start at {}; {grace_text} grace from then",
            rfc3339(expected.slot),
            rfc3339(counted_from)
        )
    } else {
        format!("fire at {} + {grace_text} grace", rfc3339(expected.slot))
    };
    NewAlert {
        kind: AlertKind::Missed,
        business_date: expected.business_date,
        detail: format!("no SUCCESS by {} ({why}); {history}", rfc3339(expected.deadline)),
        execution_id: None,
    }
}

/// What CLOCK_SKEW knows besides the measurements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockSkewLimits {
    /// `FINESETTLE_MAX_CLOCK_SKEW`: how far a replica's clock may be from the database's, either
    /// way.
    pub max_skew: Duration,
    /// A measurement older than this, by the database's clock, no longer counts: its replica
    /// stopped measuring (it died, or lost the database), so its clock is nobody's concern until
    /// it measures again. A few probe intervals, so one failed measurement does not resolve the
    /// alert.
    pub stale_after: Duration,
}

/// CLOCK_SKEW for the business date of `at` (by the database's clock, in `tz`): the replicas
/// measured within `stale_after` before `at` whose clock is off from the database's by more than
/// `max_skew`, named in the detail. `None` when every such replica is within the limit.
///
/// A measurement taken after `at` counts: it is only newer than the evaluation's instant.
pub fn clock_skew(
    measurements: &[ClockMeasurement],
    at: DateTime<Utc>,
    tz: Tz,
    limits: &ClockSkewLimits,
) -> Option<NewAlert> {
    let since = earlier_by(at, limits.stale_after);
    let max = limits.max_skew.as_secs_f64();
    let off: Vec<String> = measurements
        .iter()
        .filter(|m| m.measured_at >= since && m.skew_seconds.abs() > max)
        .map(|m| {
            let direction = if m.skew_seconds > 0.0 { "ahead of" } else { "behind" };
            // Rounded away from zero, so a skew just over the limit never reads as within it.
            let shown = (m.skew_seconds.abs() * 10.0).ceil() / 10.0;
            format!(
                "replica {}'s clock is {shown:.1} s {direction} the database's",
                m.instance_id
            )
        })
        .collect();
    (!off.is_empty()).then(|| NewAlert {
        kind: AlertKind::ClockSkew,
        business_date: business_date(at, tz),
        detail: format!("{} (limit {max} s)", off.join("; ")),
        execution_id: None,
    })
}

fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono_tz::America::New_York;
    use chrono_tz::Asia::Shanghai;

    fn utc(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    fn date(s: &str) -> NaiveDate {
        s.parse().unwrap()
    }

    fn expecting(first_seen_at: &str, start_date: Option<&str>) -> Expectation {
        Expectation {
            grace: Duration::from_secs(3600),
            first_seen_at: utc(first_seen_at),
            start_date: start_date.map(date),
        }
    }

    /// The dates due at `at`, each with its slot and deadline, as an evaluation sees them.
    /// Checks the range is exactly the dates whose deadline has passed: every one inside it, and
    /// not the next date.
    fn due(s: &CronSchedule, at: DateTime<Utc>, e: &Expectation) -> Vec<ExpectedDate> {
        let Some(range) = expected_range(s, at, e) else {
            return Vec::new();
        };
        let dates: Vec<_> = range.first.iter_days().take_while(|d| *d <= range.last).collect();
        let due: Vec<_> = dates.iter().map(|d| expected_date(s, *d, e).unwrap()).collect();
        assert!(due.iter().all(|d| d.deadline <= at), "{due:?}");
        let next = expected_date(s, range.last.succ_opt().unwrap(), e).unwrap();
        assert!(next.deadline > at, "{next:?} is due at {at} too");
        due
    }

    fn dates(v: &[ExpectedDate]) -> Vec<String> {
        v.iter().map(|e| e.business_date.to_string()).collect()
    }

    /// 02:00 Shanghai is 18:00Z the day before; the fire settles the previous Shanghai date.
    fn nightly() -> CronSchedule {
        CronSchedule::parse("0 0 2 * * *", Shanghai).unwrap()
    }

    /// 02:00 UTC, so slots read plainly.
    fn nightly_utc() -> CronSchedule {
        CronSchedule::parse("0 0 2 * * *", chrono_tz::UTC).unwrap()
    }

    #[test]
    fn a_date_is_expected_only_once_its_grace_has_passed() {
        // Deployed 2026-06-09 12:00Z; the fire of 2026-06-10 02:00 CST (06-09 18:00Z) settles 06-09.
        let e = expecting("2026-06-09T12:00:00Z", None);
        assert!(due(&nightly(), utc("2026-06-09T18:59:59Z"), &e).is_empty());
        let due = due(&nightly(), utc("2026-06-09T19:00:00Z"), &e);
        assert_eq!(dates(&due), ["2026-06-09"]);
        assert_eq!(due[0].slot, utc("2026-06-09T18:00:00Z"));
        assert_eq!(due[0].deadline, utc("2026-06-09T19:00:00Z"));
    }

    #[test]
    fn without_a_start_date_the_slots_before_the_first_deployment_expect_nothing() {
        let at = utc("2026-06-12T00:00:00Z");
        // Slots at 06-09, 06-10 and 06-11 18:00Z; deployed after the first one.
        let due_then = due(&nightly(), at, &expecting("2026-06-09T18:00:00Z", None));
        assert_eq!(dates(&due_then), ["2026-06-10", "2026-06-11"]);
        assert!(due(&nightly(), at, &expecting("2026-06-11T18:30:00Z", None)).is_empty());
    }

    #[test]
    fn every_date_from_the_start_date_is_expected_however_far_back() {
        let at = utc("2026-06-12T00:00:00Z");
        let e = expecting("2020-01-01T00:00:00Z", Some("2020-01-01"));
        let range = expected_range(&nightly(), at, &e).unwrap();
        assert_eq!((range.first, range.last), (date("2020-01-01"), date("2026-06-11")));
        let all = due(&nightly(), at, &e);
        assert_eq!(all.len(), 2354);
        assert_eq!(all[0].slot, utc("2020-01-01T18:00:00Z"));
        assert_eq!(all[0].deadline, utc("2020-01-01T19:00:00Z"));

        // A start date not due yet, or after every due date, expects nothing.
        let later = expecting("2020-01-01T00:00:00Z", Some("2026-06-12"));
        assert_eq!(expected_range(&nightly(), at, &later), None);
    }

    #[test]
    fn dates_whose_slot_predates_the_deployment_are_due_a_grace_after_it() {
        // Deployed 2026-06-10 10:00Z with a start date five months back: no fire before that
        // instant was this service's to miss, so all of them fall due at 11:00Z together.
        let e = expecting("2026-06-10T10:00:00Z", Some("2026-01-01"));
        assert_eq!(expected_range(&nightly_utc(), utc("2026-06-10T10:59:59Z"), &e), None);
        let at = utc("2026-06-10T11:00:00Z");
        let all = due(&nightly_utc(), at, &e);
        assert_eq!(all.len(), 160);
        assert_eq!(
            (all[0].business_date, all[0].slot, all[0].deadline),
            (date("2026-01-01"), utc("2026-01-02T02:00:00Z"), at)
        );
        assert_eq!(
            (all[159].business_date, all[159].slot, all[159].deadline),
            (date("2026-06-09"), utc("2026-06-10T02:00:00Z"), at)
        );
        // The first date whose slot comes after the deployment counts from its slot again.
        let next = expected_date(&nightly_utc(), date("2026-06-10"), &e).unwrap();
        assert_eq!(
            (next.slot, next.deadline),
            (utc("2026-06-11T02:00:00Z"), utc("2026-06-11T03:00:00Z"))
        );
    }

    #[test]
    fn several_slots_of_one_date_count_from_the_first() {
        // Every six hours in UTC: four fires settle each date; the deadline is the first's.
        let s = CronSchedule::parse("0 0 */6 * * *", chrono_tz::UTC).unwrap();
        let due = due(
            &s,
            utc("2026-06-10T13:00:00Z"),
            &expecting("2026-06-09T23:00:00Z", None),
        );
        assert_eq!(dates(&due), ["2026-06-09"]);
        assert_eq!(due[0].slot, utc("2026-06-10T00:00:00Z"));
    }

    #[test]
    fn dst_gap_day_is_expected_once() {
        // 02:30 New York does not exist on 2026-03-08; the fire moves to 03:00 EDT (07:00Z).
        let s = CronSchedule::parse("0 30 2 * * *", New_York).unwrap();
        let e = expecting("2026-03-06T00:00:00Z", None);
        let due_then = due(&s, utc("2026-03-10T00:00:00Z"), &e);
        assert_eq!(
            dates(&due_then),
            ["2026-03-05", "2026-03-06", "2026-03-07", "2026-03-08"]
        );
        // The gap-day fire settles 2026-03-07, an hour later in UTC than the day before's.
        assert_eq!(due_then[1].slot, utc("2026-03-07T07:30:00Z"));
        assert_eq!(due_then[2].slot, utc("2026-03-08T07:00:00Z"));
        assert_eq!(due_then[3].slot, utc("2026-03-09T06:30:00Z"));
        assert_eq!(
            dates(&due(&s, utc("2026-03-08T07:59:59Z"), &e)),
            ["2026-03-05", "2026-03-06"]
        );
        assert_eq!(
            dates(&due(&s, utc("2026-03-08T08:00:00Z"), &e)).last().unwrap(),
            "2026-03-07"
        );
    }

    #[test]
    fn dst_repeated_hour_is_expected_once_from_its_first_pass() {
        // 01:30 happens twice in New York on 2026-11-01; the fire is the first (EDT, 05:30Z).
        let s = CronSchedule::parse("0 30 1 * * *", New_York).unwrap();
        let e = expecting("2026-10-01T00:00:00Z", Some("2026-10-30"));
        let due_then = due(&s, utc("2026-11-03T00:00:00Z"), &e);
        assert_eq!(dates(&due_then), ["2026-10-30", "2026-10-31", "2026-11-01"]);
        assert_eq!(due_then[1].slot, utc("2026-11-01T05:30:00Z"));
        assert_eq!(due_then[1].deadline, utc("2026-11-01T06:30:00Z"));
        assert_eq!(due_then[2].slot, utc("2026-11-02T06:30:00Z"));
        // Due at the first pass + grace, not the second.
        assert_eq!(
            dates(&due(&s, utc("2026-11-01T06:30:00Z"), &e)).last().unwrap(),
            "2026-10-31"
        );
    }

    #[test]
    fn a_day_that_starts_after_a_gap_at_midnight_is_settled_by_its_first_fire() {
        // Havana goes from 00:00 CST straight to 01:00 CDT on 2026-03-08 (05:00Z): the day starts
        // there, and a 00:30 fire, shifted out of the gap, settles 2026-03-07 at that instant.
        let havana = chrono_tz::America::Havana;
        assert_eq!(
            start_of_day(date("2026-03-08"), havana),
            Some(utc("2026-03-08T05:00:00Z"))
        );
        let s = CronSchedule::parse("0 30 0 * * *", havana).unwrap();
        let e = expecting("2026-03-01T00:00:00Z", Some("2026-03-06"));
        let due_then = due(&s, utc("2026-03-09T12:00:00Z"), &e);
        assert_eq!(dates(&due_then), ["2026-03-06", "2026-03-07", "2026-03-08"]);
        assert_eq!(due_then[0].slot, utc("2026-03-07T05:30:00Z"));
        assert_eq!(due_then[1].slot, utc("2026-03-08T05:00:00Z"));
        assert_eq!(due_then[2].slot, utc("2026-03-09T04:30:00Z"));
        // Samoa skipped 2011-12-30: that day "starts" when 12-31 does.
        let apia = chrono_tz::Pacific::Apia;
        assert_eq!(
            start_of_day(date("2011-12-30"), apia),
            Some(utc("2011-12-30T10:00:00Z"))
        );
        assert_eq!(
            start_of_day(date("2011-12-31"), apia),
            Some(utc("2011-12-30T10:00:00Z"))
        );
    }

    #[test]
    fn timeout_cutoff_is_strictly_longer_than_the_timeout() {
        let at = utc("2026-06-10T12:00:00Z");
        assert_eq!(
            timeout_cutoff(at, Duration::from_secs(1800)),
            utc("2026-06-10T11:30:00Z")
        );
        assert_eq!(timeout_cutoff(at, Duration::MAX), DateTime::<Utc>::MIN_UTC);
    }

    fn measured(instance_id: &str, skew_seconds: f64, measured_at: &str) -> ClockMeasurement {
        ClockMeasurement {
            instance_id: instance_id.to_owned(),
            skew_seconds,
            measured_at: utc(measured_at),
        }
    }

    const CLOCK_LIMITS: ClockSkewLimits = ClockSkewLimits {
        max_skew: Duration::from_secs(5),
        stale_after: Duration::from_secs(180),
    };

    #[test]
    fn clock_skew_names_each_replica_off_by_more_than_the_limit_either_way() {
        let at = utc("2026-06-10T12:00:00Z");
        let measurements = [
            measured("r1", 10_800.25, "2026-06-10T11:59:30Z"),
            measured("r2", 4.9, "2026-06-10T11:59:30Z"),
            measured("r3", -5.01, "2026-06-10T11:59:30Z"),
            measured("r4", -5.0, "2026-06-10T11:59:30Z"),
        ];
        let alert = clock_skew(&measurements, at, Shanghai, &CLOCK_LIMITS).unwrap();
        assert_eq!((alert.kind, alert.execution_id), (AlertKind::ClockSkew, None));
        // 12:00Z is 20:00 in Shanghai, still 2026-06-10 there.
        assert_eq!(alert.business_date, date("2026-06-10"));
        assert_eq!(
            alert.detail,
            "replica r1's clock is 10800.3 s ahead of the database's; \
             replica r3's clock is 5.1 s behind the database's (limit 5 s)"
        );
        // Exactly at the limit, or within it: nothing to raise.
        assert_eq!(clock_skew(&measurements[1..2], at, Shanghai, &CLOCK_LIMITS), None);
        assert_eq!(clock_skew(&measurements[3..], at, Shanghai, &CLOCK_LIMITS), None);
        assert_eq!(clock_skew(&[], at, Shanghai, &CLOCK_LIMITS), None);
    }

    #[test]
    fn clock_skew_counts_only_replicas_measured_recently_by_the_database_clock() {
        let at = utc("2026-06-10T12:00:00Z");
        let skewed_at = |t: &str| [measured("r1", 60.0, t)];
        // A replica that stopped measuring more than three minutes ago no longer counts.
        assert_eq!(
            clock_skew(&skewed_at("2026-06-10T11:56:59Z"), at, Shanghai, &CLOCK_LIMITS),
            None
        );
        for recent in ["2026-06-10T11:57:00Z", "2026-06-10T12:00:00Z", "2026-06-10T12:00:01Z"] {
            assert!(
                clock_skew(&skewed_at(recent), at, Shanghai, &CLOCK_LIMITS).is_some(),
                "{recent}"
            );
        }
        // The business date is the database's in the business zone: 16:00Z is the next day there.
        let late = clock_skew(
            &skewed_at("2026-06-10T16:00:00Z"),
            utc("2026-06-10T16:00:00Z"),
            Shanghai,
            &CLOCK_LIMITS,
        );
        assert_eq!(late.unwrap().business_date, date("2026-06-11"));
    }

    #[test]
    fn details_say_what_an_operator_needs() {
        let d = date("2026-06-09");
        let f = failed(7, d, Some("  fence refused the write "));
        assert_eq!(f.kind, AlertKind::Failed);
        assert_eq!(f.execution_id, Some(7));
        assert!(f.detail.ends_with(": fence refused the write"), "{}", f.detail);
        assert!(failed(7, d, None).detail.contains("no error recorded"));
        let long = "x".repeat(2000);
        let shown = failed(7, d, Some(&long)).detail;
        assert!(shown.ends_with(&format!(": {}…", "x".repeat(500))), "{shown}");

        let t = timed_out(8, d, utc("2026-06-10T10:00:00Z"), Duration::from_secs(1800));
        assert!(
            t.detail.contains("since 2026-06-10T10:00:00Z") && t.detail.contains("30m"),
            "{}",
            t.detail
        );

        let e = ExpectedDate {
            business_date: d,
            slot: utc("2026-06-09T18:00:00Z"),
            deadline: utc("2026-06-09T19:00:00Z"),
        };
        let m = missed(&e, Duration::from_secs(3600), 0);
        assert_eq!((m.kind, m.execution_id), (AlertKind::Missed, None));
        assert!(m.detail.contains("by 2026-06-09T19:00:00Z"), "{}", m.detail);
        assert!(m.detail.contains("no execution was recorded"), "{}", m.detail);
        assert!(missed(&e, Duration::from_secs(3600), 2).detail.contains("2 executions"));
        // A fire from before the deployment: the deadline counts from the deployment.
        let before = ExpectedDate {
            deadline: utc("2026-06-12T11:00:00Z"),
            ..e
        };
        let m = missed(&before, Duration::from_secs(3600), 0);
        assert!(
            m.detail.starts_with(
                "no SUCCESS by 2026-06-12T11:00:00Z (its fire at 2026-06-09T18:00:00Z came before \
                 the job's first start at 2026-06-12T10:00:00Z; 1h grace from then)"
            ),
            "{}",
            m.detail
        );
    }
}

//! The alert rules of SPEC §3, as pure functions of the records and an instant: no I/O, no clock.
//!
//! | kind | raised when |
//! |---|---|
//! | `FAILED` | an execution ended FAILED and no SUCCESS exists for that date |
//! | `TIMEOUT` | an execution has been RUNNING longer than the job timeout |
//! | `MISSED` | no SUCCESS for an expected business date by its scheduled time + the grace |
//!
//! `AUDIT` alerts are not decided here: the audit (`crate::audit`) raises one when a month's
//! fines or ledger differ from a recomputation, and resolves it when a re-audit finds none. The
//! minute-by-minute evaluation never resolves them.
//!
//! "Expected" dates come from the schedule itself, not from the records, so a date nothing ever
//! attempted is still noticed: every slot of the cron (in the business zone) whose deadline has
//! passed expects a SUCCESS for the date it settles ([`settle_target`]).
//!
//! A date has at most one SUCCESS and a SUCCESS is final, so "no later SUCCESS" and "no SUCCESS"
//! are the same question for FAILED — except for a failed re-run of an already settled date,
//! which leaves the date settled and needs nobody, so it raises nothing.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, NaiveDate, TimeDelta, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::schedule::{CronSchedule, settle_target};

/// The alert kinds: the three of SPEC §3, and the audit's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum AlertKind {
    /// An execution ended FAILED and the date has no SUCCESS.
    Failed,
    /// An execution has been RUNNING longer than `FINESETTLE_JOB_TIMEOUT`.
    Timeout,
    /// No SUCCESS for an expected date by its scheduled time + `FINESETTLE_MISSED_GRACE`.
    Missed,
    /// The audit of a month (business date = its first day) found fines or ledger entries that
    /// differ from a recomputation from the loans.
    Audit,
}

impl AlertKind {
    /// Every kind, for listings (the active-alert gauge) and parsing.
    pub const ALL: [AlertKind; 4] = [
        AlertKind::Failed,
        AlertKind::Timeout,
        AlertKind::Missed,
        AlertKind::Audit,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            AlertKind::Failed => "FAILED",
            AlertKind::Timeout => "TIMEOUT",
            AlertKind::Missed => "MISSED",
            AlertKind::Audit => "AUDIT",
        }
    }
}

/// `ACTIVE` until the cause is gone, then `RESOLVED` for good.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum AlertState {
    Active,
    Resolved,
}

impl AlertState {
    pub fn as_str(self) -> &'static str {
        match self {
            AlertState::Active => "ACTIVE",
            AlertState::Resolved => "RESOLVED",
        }
    }
}

/// A kind or state name the database holds but this code does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown alert {what} `{value}`")]
pub struct UnknownName {
    what: &'static str,
    value: String,
}

impl FromStr for AlertKind {
    type Err = UnknownName;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        AlertKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| UnknownName {
                what: "kind",
                value: s.to_owned(),
            })
    }
}

impl FromStr for AlertState {
    type Err = UnknownName;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [AlertState::Active, AlertState::Resolved]
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| UnknownName {
                what: "state",
                value: s.to_owned(),
            })
    }
}

impl fmt::Display for AlertKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An alert a rule says should exist; the database decides whether it is new.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewAlert {
    pub kind: AlertKind,
    pub business_date: NaiveDate,
    pub detail: String,
    pub execution_id: Option<i64>,
}

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
    TimeDelta::from_std(timeout)
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
    /// The earliest slot that settles this date.
    pub slot: DateTime<Utc>,
    /// `slot` + grace: a SUCCESS must exist by then.
    pub deadline: DateTime<Utc>,
}

/// Where to look for expected dates, besides the schedule.
#[derive(Debug, Clone, Copy)]
pub struct ExpectationBounds {
    /// How long after its slot a date may still be settled without an alert.
    pub grace: Duration,
    /// When the job was first deployed: earlier slots expected nothing of this service.
    pub first_seen_at: DateTime<Utc>,
    /// `FINESETTLE_SETTLE_START_DATE`: earlier dates are never settled.
    pub start_date: Option<NaiveDate>,
    /// Look at most this many of the latest slots, so one evaluation stays cheap whatever the
    /// history; 62 daily slots match the job's own backfill bound.
    pub max_slots: usize,
}

/// The business dates whose deadline has passed at `at`, oldest first: one per date, for the
/// latest `max_slots` slots after `first_seen_at` whose slot + grace ≤ `at`, settling dates on or
/// after `start_date`.
pub fn expected_dates(schedule: &CronSchedule, at: DateTime<Utc>, bounds: &ExpectationBounds) -> Vec<ExpectedDate> {
    let Some(grace) = TimeDelta::from_std(bounds.grace).ok() else {
        return Vec::new();
    };
    let Some(latest_due) = at.checked_sub_signed(grace) else {
        return Vec::new();
    };
    // Newest slot first; a later (earlier-in-time) slot of the same date replaces it, so each
    // date keeps its first slot, the one its deadline counts from.
    let mut by_date = BTreeMap::new();
    let mut cursor = schedule.latest_at_or_before(latest_due);
    for _ in 0..bounds.max_slots {
        let Some(slot) = cursor.filter(|s| *s > bounds.first_seen_at) else {
            break;
        };
        let business_date = settle_target(slot, schedule.tz());
        // settle_target never decreases with the slot: every older slot settles an older date.
        if bounds.start_date.is_some_and(|start| business_date < start) {
            break;
        }
        by_date.insert(
            business_date,
            ExpectedDate {
                business_date,
                slot,
                deadline: slot + grace,
            },
        );
        cursor = schedule.latest_at_or_before(slot - TimeDelta::seconds(1));
    }
    by_date.into_values().collect()
}

/// MISSED: `expected` has no SUCCESS past its deadline. `attempts` is how many executions the
/// date has (of any status), to tell "never ran" from "ran and did not succeed".
pub fn missed(expected: &ExpectedDate, grace: Duration, attempts: i64) -> NewAlert {
    let history = match attempts {
        0 => "no execution was recorded for it".to_owned(),
        1 => "1 execution, none succeeded".to_owned(),
        n => format!("{n} executions, none succeeded"),
    };
    NewAlert {
        kind: AlertKind::Missed,
        business_date: expected.business_date,
        detail: format!(
            "no SUCCESS by {} (fire at {} + {} grace); {history}",
            rfc3339(expected.deadline),
            rfc3339(expected.slot),
            humantime::format_duration(grace)
        ),
        execution_id: None,
    }
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

    fn bounds(first_seen_at: &str) -> ExpectationBounds {
        ExpectationBounds {
            grace: Duration::from_secs(3600),
            first_seen_at: utc(first_seen_at),
            start_date: None,
            max_slots: 62,
        }
    }

    fn dates(v: &[ExpectedDate]) -> Vec<String> {
        v.iter().map(|e| e.business_date.to_string()).collect()
    }

    /// 02:00 Shanghai is 18:00Z the day before; the fire settles the previous Shanghai date.
    fn nightly() -> CronSchedule {
        CronSchedule::parse("0 0 2 * * *", Shanghai).unwrap()
    }

    #[test]
    fn a_slot_is_expected_only_once_its_grace_has_passed() {
        // Deployed 2026-06-09 12:00Z; the fire of 2026-06-10 02:00 CST (06-09 18:00Z) settles 06-09.
        let b = bounds("2026-06-09T12:00:00Z");
        assert!(expected_dates(&nightly(), utc("2026-06-09T18:59:59Z"), &b).is_empty());
        let due = expected_dates(&nightly(), utc("2026-06-09T19:00:00Z"), &b);
        assert_eq!(dates(&due), ["2026-06-09"]);
        assert_eq!(due[0].slot, utc("2026-06-09T18:00:00Z"));
        assert_eq!(due[0].deadline, utc("2026-06-09T19:00:00Z"));
    }

    #[test]
    fn slots_before_the_first_deployment_expect_nothing() {
        let at = utc("2026-06-12T00:00:00Z");
        // Slots at 06-09, 06-10 and 06-11 18:00Z; deployed after the first one.
        let due = expected_dates(&nightly(), at, &bounds("2026-06-09T18:00:00Z"));
        assert_eq!(dates(&due), ["2026-06-10", "2026-06-11"]);
        assert!(expected_dates(&nightly(), at, &bounds("2026-06-11T18:30:00Z")).is_empty());
    }

    #[test]
    fn the_start_date_and_the_window_bound_the_look_back() {
        let at = utc("2026-06-12T00:00:00Z");
        let mut b = bounds("2020-01-01T00:00:00Z");
        b.start_date = Some(date("2026-06-10"));
        assert_eq!(dates(&expected_dates(&nightly(), at, &b)), ["2026-06-10", "2026-06-11"]);
        b.start_date = None;
        b.max_slots = 3;
        assert_eq!(
            dates(&expected_dates(&nightly(), at, &b)),
            ["2026-06-09", "2026-06-10", "2026-06-11"]
        );
        b.max_slots = 62;
        let all = expected_dates(&nightly(), at, &b);
        assert_eq!(all.len(), 62);
        assert_eq!(all.last().unwrap().business_date, date("2026-06-11"));
    }

    #[test]
    fn several_slots_of_one_date_count_from_the_first() {
        // Every six hours in UTC: four fires settle each date; the deadline is the first's.
        let s = CronSchedule::parse("0 0 */6 * * *", chrono_tz::UTC).unwrap();
        let due = expected_dates(&s, utc("2026-06-10T13:00:00Z"), &bounds("2026-06-09T23:00:00Z"));
        assert_eq!(dates(&due), ["2026-06-09"]);
        assert_eq!(due[0].slot, utc("2026-06-10T00:00:00Z"));
    }

    #[test]
    fn dst_gap_day_is_expected_once() {
        // 02:30 New York does not exist on 2026-03-08; the fire moves to 03:00 EDT (07:00Z).
        let s = CronSchedule::parse("0 30 2 * * *", New_York).unwrap();
        let due = expected_dates(&s, utc("2026-03-10T00:00:00Z"), &bounds("2026-03-06T00:00:00Z"));
        assert_eq!(dates(&due), ["2026-03-05", "2026-03-06", "2026-03-07", "2026-03-08"]);
        // The gap-day fire settles 2026-03-07.
        assert_eq!(due[2].slot, utc("2026-03-08T07:00:00Z"));
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
    }

    #[test]
    fn names_round_trip() {
        for k in [AlertKind::Failed, AlertKind::Timeout, AlertKind::Missed] {
            assert_eq!(k.as_str().parse::<AlertKind>(), Ok(k));
            assert_eq!(serde_json::to_value(k).unwrap(), k.as_str());
        }
        for s in [AlertState::Active, AlertState::Resolved] {
            assert_eq!(s.as_str().parse::<AlertState>(), Ok(s));
        }
        assert!("failed".parse::<AlertKind>().is_err());
    }
}

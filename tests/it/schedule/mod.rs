//! The schedule's contract: the fire instants of six-field cron expressions in a business
//! zone, across daylight-saving changes (New York, London, Lord Howe) and in the production zone
//! (Shanghai), checked against a brute-force oracle; and the fire loop that calls back at them.
//! Where a test also asserts what croner does on its own, that is the
//! library behaviour `src/schedule/` works around: when such an assertion fails after an
//! upgrade, the workaround may be able to go.

mod boundaries;
mod dst;
mod oracle;
mod parse;
mod ticker;

use chrono::{DateTime, NaiveDateTime, Utc};
use chrono_tz::Tz;
use croner::Cron;
use croner::parser::{CronParser, Seconds};
use finesettle::schedule::CronSchedule;

// An RFC 3339 instant, as the schedule's tests write every fire.
use crate::common::fixtures::instant as utc;

fn local(t: DateTime<Utc>, tz: Tz) -> NaiveDateTime {
    t.with_timezone(&tz).naive_local()
}

fn sched(expr: &str, tz: Tz) -> CronSchedule {
    CronSchedule::parse(expr, tz).expect("valid expression")
}

fn strs(v: &[DateTime<Utc>]) -> Vec<String> {
    v.iter().map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string()).collect()
}

/// croner's own parse of a six-field expression, to compare with what it answers by itself.
fn croner(expr: &str) -> Cron {
    CronParser::builder()
        .seconds(Seconds::Required)
        .build()
        .parse(expr)
        .expect("valid expression")
}

/// Asserts the first fires of `s` after `after`, each as RFC 3339 (`expected.len()` of them).
#[track_caller]
fn assert_upcoming(s: &CronSchedule, after: &str, expected: &[&str]) {
    assert_eq!(strs(&s.upcoming(utc(after), expected.len())), expected, "after {after}");
}

/// Asserts `next_after` for each (instant, the fire strictly after it) pair.
#[track_caller]
fn assert_next_after(s: &CronSchedule, cases: &[(&str, &str)]) {
    for (at, expected) in cases {
        assert_eq!(s.next_after(utc(at)), Some(utc(expected)), "next after {at}");
    }
}

/// Asserts `latest_at_or_before` for each (instant, the last fire at or before it) pair.
#[track_caller]
fn assert_latest_at_or_before(s: &CronSchedule, cases: &[(&str, &str)]) {
    for (at, expected) in cases {
        assert_eq!(
            s.latest_at_or_before(utc(at)),
            Some(utc(expected)),
            "latest at or before {at}"
        );
    }
}

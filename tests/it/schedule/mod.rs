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

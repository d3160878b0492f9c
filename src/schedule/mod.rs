//! Cron schedules in a business time zone and the fire loop.
//!
//! [`CronSchedule`] is the single source of fire times: it evaluates a six-field (seconds
//! first) cron expression on the wall clock of the business zone with the zone's real offset
//! at every instant, so fire times stay right across daylight-saving changes (see
//! [`cron`] for the exact rules). It also answers the questions the rest of the
//! service asks: next fires for the jobs API, the latest slot for start-up catch-up and MISSED
//! alerts, and the slots in a range.
//!
//! [`Ticker`] turns a schedule into calls: it arms a one-shot tokio-cron-scheduler job for each
//! slot we computed (never a cron job of its own, whose offset freezes after the first run),
//! passes the scheduled slot rather than the wake-up time, and collapses slots missed while the
//! process was suspended into one fire. [`settle_target`] maps a slot to the business date it
//! settles.

pub mod cron;
pub mod ticker;

pub use cron::{CronSchedule, ScheduleError, settle_target};
pub use ticker::Ticker;

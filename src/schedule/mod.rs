//! Cron schedules in a business time zone and the fire loop.
//!
//! [`CronSchedule`] is the single source of fire times, right across daylight-saving changes
//! (see [`cron`] for the rules): next fires for the jobs API, the latest slot for start-up
//! catch-up and MISSED alerts, the slots in a range. [`Ticker`] calls back at each slot, awaited
//! on the database's clock ([`TimeSource`]), with the scheduled instant, not the wake-up time.
//! [`settle_target`] maps a slot to the business date it settles.

pub mod cron;
pub mod ticker;

pub use cron::{CronSchedule, ScheduleError, settle_target};
pub use ticker::{Ticker, TimeSource};

//! Cron expressions and slots for tests that drive the real scheduler.

use chrono::{DateTime, Datelike, NaiveDate, TimeZone, Timelike, Utc};
use chrono_tz::Asia::Shanghai;
use sqlx::PgPool;

/// A cron expression (business zone: Shanghai) that fires exactly once, at `at` rounded down to
/// the second. No slot lies before it, so a replica started before it has nothing to catch up.
pub fn once_at(at: DateTime<Utc>) -> String {
    let local = at.with_timezone(&Shanghai);
    format!(
        "{} {} {} {} {} * {}",
        local.second(),
        local.minute(),
        local.hour(),
        local.day(),
        local.month(),
        local.year()
    )
}

/// The database clock `seconds` from now, on a whole second: the instant of a [`once_at`] slot.
pub async fn whole_second_in(pool: &PgPool, seconds: i64) -> DateTime<Utc> {
    let now = finesettle::store::clock::now(pool).await.unwrap();
    let at = now + chrono::Duration::seconds(seconds);
    at.with_nanosecond(0).unwrap()
}

/// The daily cron slot that settles `target`: 02:00 in Shanghai the next day.
pub fn slot_for(target: NaiveDate) -> DateTime<Utc> {
    Utc.from_utc_datetime(&target.and_hms_opt(18, 0, 0).unwrap())
}

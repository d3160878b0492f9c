//! The database clock. Lock and lease times, and "today" for requests, come from here rather
//! than from each replica's own clock, so replicas with skewed clocks still agree.

use chrono::{DateTime, NaiveDate, Utc};
use chrono_tz::Tz;

use crate::domain::business_date;

pub async fn now(executor: impl sqlx::PgExecutor<'_>) -> sqlx::Result<DateTime<Utc>> {
    sqlx::query_scalar!(r#"select now() as "now!""#)
        .fetch_one(executor)
        .await
}

/// The database's clock at the moment this statement runs (`clock_timestamp()`), not at the start
/// of its transaction: what a check inside a long transaction must compare with.
pub async fn current(executor: impl sqlx::PgExecutor<'_>) -> sqlx::Result<DateTime<Utc>> {
    sqlx::query_scalar!(r#"select clock_timestamp() as "now!""#)
        .fetch_one(executor)
        .await
}

/// Today's business date in `tz`, by the database clock.
pub async fn business_today(executor: impl sqlx::PgExecutor<'_>, tz: Tz) -> sqlx::Result<NaiveDate> {
    Ok(business_date(now(executor).await?, tz))
}

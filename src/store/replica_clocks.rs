//! Each replica's latest clock measurement (`replica_clock`), which the clock-skew probe writes
//! and the `CLOCK_SKEW` alert rule reads.

use crate::domain::replica_clock::ClockMeasurement;

/// Records `instance_id`'s skew, measured now by the database's clock, replacing its previous
/// measurement.
///
/// Also forgets the replicas that stopped measuring a week ago. The alert rule stops counting a
/// silent replica within minutes; its row stays a while longer for an operator asking what a
/// dead replica's clock was, then goes, so that replicas named by host and pid (the default
/// `FINESETTLE_INSTANCE_ID`) do not pile up over restarts.
pub async fn record(executor: impl sqlx::PgExecutor<'_>, instance_id: &str, skew_seconds: f64) -> sqlx::Result<()> {
    sqlx::query!(
        r#"
        with forgotten as (
            delete from replica_clock
            where instance_id in (
                select instance_id from replica_clock
                where measured_at < now() - interval '7 days'
                  -- one statement must not both delete and upsert a row
                  and instance_id <> $1
                -- every replica prunes: skip the rows another one is deleting rather than wait
                for update skip locked)
        )
        insert into replica_clock (instance_id, skew_seconds, measured_at)
        values ($1, $2, now())
        on conflict (instance_id) do update
            set skew_seconds = excluded.skew_seconds, measured_at = excluded.measured_at
        "#,
        instance_id,
        skew_seconds
    )
    .execute(executor)
    .await?;
    Ok(())
}

/// Every replica's latest measurement, by replica name: one row per replica that measured in
/// the last week, so a handful.
pub async fn latest(executor: impl sqlx::PgExecutor<'_>) -> sqlx::Result<Vec<ClockMeasurement>> {
    sqlx::query_as!(
        ClockMeasurement,
        "select instance_id, skew_seconds, measured_at from replica_clock order by instance_id"
    )
    .fetch_all(executor)
    .await
}

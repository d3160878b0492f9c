//! Business dates made slow on purpose: the database sleeps in every transaction that writes a
//! fine, so that a date (one transaction) takes at least as long as the test needs.

use std::time::Duration;

use sqlx::PgPool;

use crate::common::triggers::create_trigger;

/// Makes every transaction that writes to `fine_record` sleep `each` at its first write
/// statement (a statement trigger, so even a statement that writes no row sleeps): each business
/// date then takes at least `each`, spent inside its fenced transaction. The database ends the
/// sleep on its own if the client goes away, at the end of the sleep.
pub async fn slow_dates(pool: &PgPool, each: Duration) {
    // Once per transaction: the flag is local to it.
    let body = format!(
        "if current_setting('test.slept', true) is distinct from 'yes' then
             perform set_config('test.slept', 'yes', true);
             perform pg_sleep({seconds});
         end if;
         return null;",
        seconds = each.as_secs_f64()
    );
    create_trigger(
        pool,
        "test_slow_date",
        "before insert or update on fine_record for each statement",
        &body,
    )
    .await;
}

/// Makes dates fast again. Waits for the transactions that have the table open.
pub async fn fast_dates(pool: &PgPool) {
    sqlx::raw_sql("drop trigger test_slow_date on fine_record; drop function test_slow_date()")
        .execute(pool)
        .await
        .unwrap();
}

/// How long the execution `id` ran, by the database clock (`finished_at - started_at`).
pub async fn execution_duration(pool: &PgPool, id: i64) -> Duration {
    let seconds: f64 = sqlx::query_scalar(
        "select extract(epoch from finished_at - started_at)::float8 from task_execution where id = $1",
    )
    .bind(id)
    .fetch_one(pool)
    .await
    .unwrap();
    Duration::from_secs_f64(seconds)
}

/// Sessions of this database sleeping in [`slow_dates`]' trigger: a date inside its fenced
/// transaction.
pub async fn sleeping_dates(pool: &PgPool) -> i64 {
    sqlx::query_scalar(
        "select count(*) from pg_stat_activity \
         where datname = current_database() and wait_event = 'PgSleep'",
    )
    .fetch_one(pool)
    .await
    .unwrap()
}

//! Benchmark: loan reminders processed per second by three consumers, next to Redis's own
//! round-trip rate measured in the same run.
//!
//! Run with `load/bench-reminders` (or `cargo run --release --example reminders_bench`).
//!
//! 1. Seeds a scratch database `finesettle_bench_reminders` with `BENCH_REMINDERS` open loans
//!    (default 50,000), all overdue, and queues their OVERDUE reminders under a key prefix of its
//!    own (`finesettle:bench:<uuid>`) in `REDIS_URL`'s Redis (default `redis://127.0.0.1:6379`).
//! 2. Three consumers, each with its own Redis pool (three replicas), drain the queue
//!    concurrently with the service's consumer step (`consume_once`, `BENCH_BATCH` reminders per
//!    step, default 100: take by Lua, record in Postgres, acknowledge). Checked afterwards: every
//!    reminder recorded exactly once, nothing left queued or in flight.
//! 3. PING loops on the same client stack (deadpool-redis): one connection, then three
//!    concurrent ones, for `BENCH_PING_SECONDS` each (default 3): Redis's round-trip rate.
//!
//! Prints both rates and their ratio. Each consumer step costs two Redis round trips (take,
//! acknowledge) and one Postgres statement per batch, so the ratio says how much batching buys
//! over one round trip per reminder, and where the time goes.
//!
//! The Postgres server comes from `DATABASE_URL` (its database name is replaced), default
//! `postgres://postgres@127.0.0.1:5432`. `BENCH_KEEP=1` keeps the scratch database.

use std::time::{Duration, Instant};

use anyhow::ensure;
use chrono::{DateTime, NaiveDate, Utc};
use deadpool_redis::Pool;
use finesettle::domain::LoanId;
use finesettle::reminders::ReminderQueue;
use finesettle::reminders::consumer::{ConsumeReport, ConsumerConfig, consume_once};
use finesettle::reminders::timing::{self, Timed};
use finesettle::store::database;
use sqlx::{AssertSqlSafe, PgPool};

// `ms` is shared with the other benches but unused here.
#[allow(dead_code)]
#[path = "common/mod.rs"]
mod common;
use common::{Scratch, env_or, per_second};

const DB: &str = "finesettle_bench_reminders";
const CONSUMERS: usize = 3;
/// Every loan is due on this date, and the consumers run at `NOW`: all OVERDUE reminders due.
const DUE_ON: &str = "2026-01-10";
const NOW: &str = "2026-02-01T00:00:00Z";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let reminders: i64 = env_or("BENCH_REMINDERS", 50_000)?;
    let batch: usize = env_or("BENCH_BATCH", 100)?;
    let ping_time = Duration::from_secs(env_or("BENCH_PING_SECONDS", 3)?);
    let redis_url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
    let scratch = Scratch::from_env();
    let tz = chrono_tz::Asia::Shanghai;
    let now: DateTime<Utc> = NOW.parse()?;

    println!("seeding {reminders} overdue loans into {DB} ...");
    let pool = scratch.fresh(DB, None, 8).await?;
    database::migrate(&pool).await?;
    seed(&pool, reminders).await?;

    let prefix = format!("finesettle:bench:{}", uuid::Uuid::new_v4().simple());
    let scheduler = ReminderQueue::with_prefix(finesettle::store::redis::pool(&redis_url)?, &prefix);
    let loans: Vec<(i64, NaiveDate)> = sqlx::query_as("select id, due_on from loan order by id")
        .fetch_all(&pool)
        .await?;
    let timed: Vec<Timed> = loans
        .iter()
        .flat_map(|&(id, due_on)| timing::for_loan(LoanId(id), due_on, now, tz))
        .collect();
    ensure!(timed.len() as i64 == reminders, "one OVERDUE reminder per overdue loan");
    let scheduling = Instant::now();
    for chunk in timed.chunks(1_000) {
        scheduler.schedule(chunk).await?;
    }
    let scheduling = scheduling.elapsed();

    // Three replicas drain the queue.
    let config = ConsumerConfig {
        batch_size: batch,
        visibility: Duration::from_secs(30),
        business_tz: tz,
    };
    let started = Instant::now();
    let consumers: Vec<_> = (0..CONSUMERS)
        .map(|_| {
            let pool = pool.clone();
            let queue = ReminderQueue::with_prefix(finesettle::store::redis::pool(&redis_url)?, &prefix);
            Ok(tokio::spawn(async move { drain(&pool, &queue, &config, now).await }))
        })
        .collect::<anyhow::Result<_>>()?;
    let mut reports = Vec::new();
    for consumer in consumers {
        reports.push(consumer.await??);
    }
    let draining = started.elapsed();

    let taken: usize = reports.iter().map(|r| r.taken).sum();
    let recorded: u64 = reports.iter().map(|r| r.recorded).sum();
    let rows: i64 = sqlx::query_scalar("select count(*) from notification")
        .fetch_one(&pool)
        .await?;
    let stats = scheduler.stats().await?;
    ensure!(
        taken as i64 == reminders && recorded as i64 == reminders && rows == reminders,
        "each reminder once: taken {taken}, recorded {recorded}, rows {rows}, expected {reminders}"
    );
    ensure!(stats.depth == 0 && stats.in_flight == 0, "nothing left: {stats:?}");

    // Redis's own round-trip rate, on the same client stack.
    let ping_pool = finesettle::store::redis::pool(&redis_url)?;
    let single = ping_rate(&ping_pool, 1, ping_time).await?;
    let triple = ping_rate(&ping_pool, CONSUMERS, ping_time).await?;

    let reminder_rate = per_second(reminders as f64, draining);
    println!();
    println!(
        "reminders: {reminders}, consumers: {CONSUMERS}, batch: {batch} (2 Redis round trips + 1 insert per batch)"
    );
    println!(
        "  queued           {:>10.0} reminders/s   ({:.2} s, Lua schedule script, 1,000 per call)",
        per_second(reminders as f64, scheduling),
        scheduling.as_secs_f64()
    );
    println!(
        "  processed        {:>10.0} reminders/s   ({:.2} s: take, record, acknowledge; per consumer {})",
        reminder_rate,
        draining.as_secs_f64(),
        reports
            .iter()
            .map(|r| r.taken.to_string())
            .collect::<Vec<_>>()
            .join(" / ")
    );
    println!("  Redis PING x1    {single:>10.0} round trips/s");
    println!("  Redis PING x{CONSUMERS}    {triple:>10.0} round trips/s");
    println!(
        "  ratio            {:>10.2} reminders per PING round trip (three consumers vs three PING loops)",
        reminder_rate / triple
    );
    let step_round_trips = 2.0 * reminder_rate / batch as f64;
    println!(
        "  steps' Redis use {step_round_trips:>10.0} round trips/s   ({:.1}% of the PING x{CONSUMERS} rate: the rest is Postgres)",
        100.0 * step_round_trips / triple
    );

    let mut conn = ping_pool.get().await?;
    let _: u64 = redis::cmd("DEL")
        .arg(scheduler.queue_key())
        .arg(scheduler.processing_key())
        .query_async(&mut conn)
        .await?;
    pool.close().await;
    scratch.clean_up(&[DB]).await
}

/// Consumes at `now` until a step takes nothing; the reports summed.
async fn drain(
    pool: &PgPool,
    queue: &ReminderQueue,
    config: &ConsumerConfig,
    now: DateTime<Utc>,
) -> anyhow::Result<ConsumeReport> {
    let mut total = ConsumeReport::default();
    loop {
        let report = consume_once(pool, queue, config, now).await?;
        if report.taken == 0 {
            return Ok(total);
        }
        total.taken += report.taken;
        total.recorded += report.recorded;
        total.skipped += report.skipped;
    }
}

/// PINGs per second over `connections` concurrent sequential loops, for `time`.
async fn ping_rate(pool: &Pool, connections: usize, time: Duration) -> anyhow::Result<f64> {
    let loops: Vec<_> = (0..connections)
        .map(|_| {
            let pool = pool.clone();
            tokio::spawn(async move {
                let mut conn = pool.get().await?;
                let started = Instant::now();
                let mut pings = 0u64;
                while started.elapsed() < time {
                    let _: String = redis::cmd("PING").query_async(&mut conn).await?;
                    pings += 1;
                }
                anyhow::Ok((pings, started.elapsed()))
            })
        })
        .collect();
    let mut rate = 0.0;
    for ping_loop in loops {
        let (pings, elapsed) = ping_loop.await??;
        rate += per_second(pings as f64, elapsed);
    }
    Ok(rate)
}

/// `loans` open loans due on [`DUE_ON`], spread over 1,000 members, one book each.
async fn seed(pool: &PgPool, loans: i64) -> anyhow::Result<()> {
    let sql = format!(
        "
        insert into member (name, email)
        select 'member ' || g, 'member' || g || '@example.org' from generate_series(1, 1000) g;
        insert into book (title) select 'book ' || g from generate_series(1, {loans}) g;
        insert into loan (member_id, book_id, borrowed_on, due_on, daily_fine_cents)
        select 1 + g % 1000, g, date '{DUE_ON}' - 14, date '{DUE_ON}', 50 from generate_series(1, {loans}) g;
        analyze;
        "
    );
    sqlx::raw_sql(AssertSqlSafe(sql)).execute(pool).await?;
    Ok(())
}

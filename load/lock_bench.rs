//! Benchmark: acquire + release of the job lock, next to its physical floor, two durable
//! single-row commits, measured in the same run.
//!
//! Run with `load/bench-lock` (or `cargo run --release --example lock_bench`).
//!
//! A lock that is not durable is not a lock: a holder whose acquisition a crash could undo would
//! let a second replica run the task. So one cycle of the lock costs at least two commits that
//! wait for their WAL flush (the acquisition and the release), and that is the floor it is
//! measured against:
//!
//! - (a) lock: `JobLock::postgres` on a pool of one connection, `try_acquire` (at_most_for 15m)
//!   then `release` (at_least_for 0, so that the next cycle can take it again at once);
//! - (b) floor: two autocommit statements on the same pool, an upsert of one row then an update
//!   of it, each its own durable commit;
//! - (c) one round trip (`select 1` on a connection already checked out), the unit to read the
//!   gap between (a) and (b) in.
//!
//! They run in alternating blocks (`BENCH_BLOCKS` blocks of `BENCH_BLOCK_CYCLES` cycles each,
//! default 200 × 50, after `BENCH_WARMUP` cycles of each, default 200; the side that goes first
//! alternates), so that a change in machine load hits both alike: short blocks, because a burst of
//! disk or CPU load from elsewhere lasts long enough to land on one side of a long block only.
//! `synchronous_commit` and `fsync` are left at the server's settings and printed, and the WAL
//! flushes per cycle are counted from `pg_stat_wal`: about two for both sides means every commit
//! waited for the disk.
//!
//! Where the gap comes from, message by message (read off the wire with `PGSSLMODE=disable` and
//! `strace -e sendto`; `tests/it/lock/round_trips.rs` counts them in CI): a cycle of (a) is two pool
//! checkouts and two awaited messages, the acquisition (one `insert .. on conflict .. returning`
//! that sets its own `lock_timeout` and commits on its own) and the release's `update`. A cycle of
//! (b) is two pool checkouts and two statements. Each checkout costs sqlx two `Sync` pings (one
//! when the connection returns to the pool, one when it leaves again), alike on both sides. So the
//! lock sends what its floor sends and waits for the same two WAL flushes; what is left is the
//! server's work per statement (the snapshot read, the unique index on the tokens, a wider row).
//! Before issue 21 the acquisition was wrapped in `begin` and `commit`: two round trips more,
//! 1.28x the floor.
//!
//! The database is the scratch database `finesettle_lockbench` (dropped and created again, then
//! migrated) on `DATABASE_URL`'s server (its database name is replaced, so that the benchmark can
//! never drop a database someone uses), default `postgres://postgres@127.0.0.1:5432`.
//! `BENCH_KEEP=1` keeps it.

use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use finesettle::domain::TaskName;
use finesettle::lock::{Acquired, JobLock, LockSpec};
use finesettle::store::database;
use sqlx::PgPool;

#[path = "common/mod.rs"]
mod common;
use common::{Scratch, env_or, ms, per_second};

const DB: &str = "finesettle_lockbench";
const TASK: TaskName = TaskName::from_static("bench-lock");
/// The aim: lock time per cycle at most 1.1 × the floor's, at the mean and at the median.
const AIM: f64 = 1.1;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    finesettle::telemetry::init();
    let warmup: usize = env_or("BENCH_WARMUP", 200)?;
    // 200 blocks: a run of about 30 s; with 40, runs of the same code spread by ±0.04 in ratio
    let blocks: usize = env_or("BENCH_BLOCKS", 200)?;
    let block_cycles: usize = env_or("BENCH_BLOCK_CYCLES", 50)?;
    let scratch = Scratch::from_env();

    // One connection: every cycle is sequential, and one backend makes the WAL counts exact.
    let pool = scratch.fresh(DB, None, 1).await?;
    database::migrate(&pool).await?;
    sqlx::raw_sql("create table bench_floor (id int primary key, v bigint not null)")
        .execute(&pool)
        .await?;
    let synchronous_commit: String = sqlx::query_scalar("show synchronous_commit").fetch_one(&pool).await?;
    let fsync: String = sqlx::query_scalar("show fsync").fetch_one(&pool).await?;
    let wal_sync_method: String = sqlx::query_scalar("show wal_sync_method").fetch_one(&pool).await?;
    let version: String = sqlx::query_scalar("show server_version").fetch_one(&pool).await?;
    let tls: bool =
        sqlx::query_scalar("select coalesce((select ssl from pg_stat_ssl where pid = pg_backend_pid()), false)")
            .fetch_one(&pool)
            .await?;

    let lock = JobLock::postgres(pool.clone());
    let spec = LockSpec {
        task_name: TASK,
        instance_id: "bench".to_owned(),
        at_most_for: Duration::from_secs(15 * 60),
        at_least_for: Duration::ZERO,
    };

    println!("warming up: {warmup} cycles of each ...");
    let mut counter = 0_i64;
    lock_cycles(&lock, &spec, warmup).await?;
    floor_cycles(&pool, warmup, &mut counter).await?;
    round_trips(&pool, warmup).await?;

    let mut lock_side = Side::default();
    let mut floor_side = Side::default();
    let mut trip_side = Side::default();
    for block in 0..blocks {
        // The side that runs first alternates.
        if block % 2 == 0 {
            lock_side.record(&pool, lock_cycles(&lock, &spec, block_cycles)).await?;
            floor_side
                .record(&pool, floor_cycles(&pool, block_cycles, &mut counter))
                .await?;
        } else {
            floor_side
                .record(&pool, floor_cycles(&pool, block_cycles, &mut counter))
                .await?;
            lock_side.record(&pool, lock_cycles(&lock, &spec, block_cycles)).await?;
        }
        trip_side.record(&pool, round_trips(&pool, block_cycles)).await?;
    }

    // Every lock cycle took the lock afresh: one fencing token per acquisition.
    let fencing_token: i64 = sqlx::query_scalar("select fencing_token from task_lock where task_name = $1")
        .bind(TASK)
        .fetch_one(&pool)
        .await?;
    let acquisitions = warmup + blocks * block_cycles;
    ensure!(
        fencing_token == acquisitions as i64,
        "expected {acquisitions} acquisitions, the fencing token says {fencing_token}"
    );
    let v: i64 = sqlx::query_scalar("select v from bench_floor where id = 1")
        .fetch_one(&pool)
        .await?;
    ensure!(
        v == counter + 1,
        "the floor's last update did not land (v = {v}, expected {})",
        counter + 1
    );

    println!();
    println!(
        "PostgreSQL {version}: synchronous_commit = {synchronous_commit}, fsync = {fsync}, \
         wal_sync_method = {wal_sync_method}"
    );
    println!(
        "{blocks} alternating blocks of {block_cycles} cycles each side (after {warmup} warm-up cycles), \
         one pool of 1 connection{}",
        if tls { " (TLS)" } else { "" }
    );
    println!();
    println!(
        "{:<42} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>11}",
        "", "cycles/s", "mean ms", "p50 ms", "p99 ms", "1st ms", "2nd ms", "WAL flushes"
    );
    lock_side.print("(a) lock: try_acquire + release", true);
    floor_side.print("(b) floor: two durable single-row commits", true);
    trip_side.print("(c) one round trip (select 1)", false);
    println!();
    let ratio = lock_side.mean() / floor_side.mean();
    let p50_ratio = lock_side.quantile(0.50) / floor_side.quantile(0.50);
    println!(
        "ratio lock / floor (time per cycle): mean {ratio:.2}x, p50 {p50_ratio:.2}x   aim <= {AIM}x at both: {}",
        if ratio <= AIM && p50_ratio <= AIM {
            "met"
        } else {
            "NOT met"
        }
    );
    let gap_p50 = lock_side.quantile(0.50) - floor_side.quantile(0.50);
    println!(
        "gap lock - floor at p50: {:.3} ms per cycle = {:.1} round trips of (c) \
         (expected: about 0, both sides send two statements)",
        ms(gap_p50),
        gap_p50 / trip_side.quantile(0.50)
    );
    println!(
        "per cycle: (a) 2 WAL flushes, 2 pool checkouts, 2 messages (the acquisition, the release); \
         (b) 2 WAL flushes, 2 pool checkouts, 2 messages; each checkout adds sqlx's 2 pings to both"
    );

    pool.close().await;
    scratch.clean_up(&[DB]).await
}

/// One cycle's time, and the time its first commit took (the acquisition, or the upsert).
#[derive(Clone, Copy)]
struct Cycle {
    first: Duration,
    total: Duration,
}

/// `cycles` acquisitions, each released at once (at_least_for 0 frees the lock on release).
async fn lock_cycles(lock: &JobLock, spec: &LockSpec, cycles: usize) -> anyhow::Result<Vec<Cycle>> {
    let mut times = Vec::with_capacity(cycles);
    for _ in 0..cycles {
        let started = Instant::now();
        let lease = match lock.try_acquire(spec).await? {
            Acquired::Won(lease) => lease,
            Acquired::Held { holder, locked_until } => {
                anyhow::bail!("the lock was still held by {holder} until {locked_until}")
            }
        };
        let first = started.elapsed();
        let released = lock.release(&lease, spec.at_least_for).await?;
        times.push(Cycle {
            first,
            total: started.elapsed(),
        });
        ensure!(released, "the release found the lease no longer ours");
    }
    Ok(times)
}

/// `cycles` pairs of durable commits: an upsert, then an update, each its own transaction.
async fn floor_cycles(pool: &PgPool, cycles: usize, counter: &mut i64) -> anyhow::Result<Vec<Cycle>> {
    let mut times = Vec::with_capacity(cycles);
    for _ in 0..cycles {
        *counter += 1;
        let started = Instant::now();
        sqlx::query("insert into bench_floor (id, v) values (1, $1) on conflict (id) do update set v = excluded.v")
            .bind(*counter)
            .execute(pool)
            .await?;
        let first = started.elapsed();
        sqlx::query("update bench_floor set v = v + 1 where id = 1")
            .execute(pool)
            .await?;
        times.push(Cycle {
            first,
            total: started.elapsed(),
        });
    }
    Ok(times)
}

/// `cycles` round trips that write nothing, on one connection checked out once: the unit the
/// lock's extra messages cost (a pool checkout costs sqlx two of them: a ping when the connection
/// comes back and one when it goes out again).
async fn round_trips(pool: &PgPool, cycles: usize) -> anyhow::Result<Vec<Cycle>> {
    let mut conn = pool.acquire().await?;
    let mut times = Vec::with_capacity(cycles);
    for _ in 0..cycles {
        let started = Instant::now();
        sqlx::query("select 1").execute(&mut *conn).await?;
        let total = started.elapsed();
        times.push(Cycle { first: total, total });
    }
    Ok(times)
}

/// The cycles of one side across its blocks, and the WAL flushes they caused.
#[derive(Default)]
struct Side {
    cycles: Vec<Cycle>,
    elapsed: Duration,
    wal_syncs: i64,
}

impl Side {
    /// Runs one block (a future does nothing until awaited), keeping its cycles, its elapsed time
    /// and its WAL flush count.
    async fn record(
        &mut self,
        pool: &PgPool,
        block: impl Future<Output = anyhow::Result<Vec<Cycle>>>,
    ) -> anyhow::Result<()> {
        let before = wal_syncs(pool).await?;
        let started = Instant::now();
        let cycles = block.await?;
        self.elapsed += started.elapsed();
        self.wal_syncs += wal_syncs(pool).await? - before;
        self.cycles.extend(cycles);
        Ok(())
    }

    fn cycles_per_second(&self) -> f64 {
        per_second(self.cycles.len() as f64, self.elapsed)
    }

    /// Mean cycle time, in seconds.
    fn mean(&self) -> f64 {
        self.average(|cycle| cycle.total)
    }

    /// Mean time of the first commit (the acquisition, or the upsert), in seconds.
    fn mean_first(&self) -> f64 {
        self.average(|cycle| cycle.first)
    }

    fn average(&self, part: impl Fn(&Cycle) -> Duration) -> f64 {
        let sum: f64 = self.cycles.iter().map(|cycle| part(cycle).as_secs_f64()).sum();
        sum / self.cycles.len().max(1) as f64
    }

    /// The `q` quantile of the cycle times (nearest rank), in seconds.
    fn quantile(&self, q: f64) -> f64 {
        let mut sorted: Vec<Duration> = self.cycles.iter().map(|cycle| cycle.total).collect();
        sorted.sort_unstable();
        let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len().max(1));
        sorted.get(rank - 1).map_or(0.0, Duration::as_secs_f64)
    }

    fn print(&self, name: &str, split: bool) {
        let (first, second) = if split {
            let first = self.mean_first();
            (format!("{:.3}", ms(first)), format!("{:.3}", ms(self.mean() - first)))
        } else {
            (String::new(), String::new())
        };
        println!(
            "{name:<42} {:>9.0} {:>9.3} {:>9.3} {:>9.3} {first:>9} {second:>9} {:>11}",
            self.cycles_per_second(),
            ms(self.mean()),
            ms(self.quantile(0.50)),
            ms(self.quantile(0.99)),
            format!("{:.2}/cycle", self.wal_syncs as f64 / self.cycles.len().max(1) as f64)
        );
    }
}

/// The server's count of WAL flushes (`pg_stat_wal.wal_sync`), including this backend's latest.
///
/// A backend publishes its statistics when it goes idle, at most once a second unless told to:
/// the first statement asks for the next flush and going idle after it performs the flush, so
/// the second one reads a count that includes every commit made on this (single) connection.
async fn wal_syncs(pool: &PgPool) -> anyhow::Result<i64> {
    let mut conn = pool.acquire().await?;
    sqlx::query("select pg_stat_force_next_flush()")
        .execute(&mut *conn)
        .await?;
    let syncs: i64 = sqlx::query_scalar("select wal_sync from pg_stat_wal")
        .fetch_one(&mut *conn)
        .await
        .context("reading pg_stat_wal (PostgreSQL 14 or later)")?;
    Ok(syncs)
}

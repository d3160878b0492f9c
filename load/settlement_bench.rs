//! Benchmark: the settlement of one business date over a million loans, next to the same work
//! done by hand-written set-based SQL on the same schema and on a minimal schema, and the rerun of
//! the settled date.
//!
//! Run with `load/bench-settlement` (or `cargo run --release --example settlement_bench`).
//!
//! 1. Seeds a scratch database `finesettle_bench_settle_seed` (`BENCH_LOANS` loans, default
//!    1,000,000; about 30% have overdue days in the month of the date) with `generate_series`,
//!    triggers and foreign-key checks off (the rows are valid by construction), and the same
//!    members and loans into `finesettle_bench_settle_min_seed`, a minimal schema (below).
//!    Each of `BENCH_ROUNDS` rounds (default 3) copies them (`create database .. template ..`)
//!    into `finesettle_bench_settle_a`, `_b` and `_min`: identical starting points on the same
//!    server. The three sides run one after the other, rotating which goes first (on a shared
//!    machine the load changes between runs: compare the per-round ratios);
//!    `BENCH_MODE=side-by-side` runs them at the same time instead.
//! 2. (a) finesettle: `settlement::settle_dates` for the month-end date on copy A (fence guard,
//!    execution records, batches of `BENCH_BATCH_SIZE` rows, `for update skip locked`, one
//!    transaction). The month end is taken so that both steps have every fine to do: the accrual
//!    writes all of them and the settlement makes all of them final.
//! 3. (b) hand-written: one `insert .. select .. on conflict` for the accrual and one
//!    `update .. returning` feeding an `insert` for the settlement, in one transaction, on copy B.
//!    Same recomputation of the final amount, same ledger entries; no batching, no fence, no
//!    records. The copies must end equal (checked).
//! 4. (m) the minimal schema: the same columns, but only the primary keys, the unique
//!    `(loan_id, settle_month)` key of the accrual's upsert and the partial index of PENDING
//!    fines; no foreign key, check, trigger or other index. The accrual is one upsert statement,
//!    the settlement keyset batches of `BENCH_BATCH_SIZE` fines along the partial index, each
//!    fine with one CHARGE, in one transaction: what the hardware does with the work itself.
//!    Its fines and ledger must equal finesettle's (checked).
//!    The ratios printed are finesettle's against each: against (b) what our SQL costs on our
//!    schema, against (m) what the schema's rules cost.
//! 5. Per round, the temporary bytes finesettle's database wrote (`pg_stat_database.temp_bytes`)
//!    and, at the end, this process's peak resident memory (`VmHWM`): it ran finesettle's side as
//!    a replica would. In the default (sequential) mode, each side's WAL records, full-page
//!    images, bytes and flushes, the checkpoints, the buffers its backend wrote out and the blocks
//!    it read (`Io`): where the schema's cost goes as the data grows.
//! 6. (c) the rerun of the settled date on the last round's A, under a newer fencing token: its time, and a
//!    checksum of every fine and ledger row, including each row version's `xmin`, before and
//!    after: equal means the rerun rewrote no row, not even with the same values.
//! 7. (d) the same date on a fresh copy after `BENCH_IMPORTS` (default 10,000) back-dated imports
//!    (loans recorded now, overdue since January or February): their earlier months are accrued
//!    and settled by the date too (`settlement::changes`). Its time next to the rounds' best
//!    time without imports is the cost of the imports. `BENCH_EXTRAS=0` leaves (c) and (d) out.
//!
//! finesettle's schema is the one after the release's contract step (`finesettle migrate
//! --contract`), what replicas serve once the roll is over; `BENCH_CONTRACT=0` leaves the
//! contract migrations out (the upgrade window, when the previous release's indexes are still
//! kept up).
//!
//! The seeded loans stand for history that earlier nights accrued: the seed empties the queue of
//! recorded loans (`loan_change`), so rounds (a)/(b) measure an ordinary night with no import.
//!
//! The server comes from `DATABASE_URL` (its database name is replaced), default
//! `postgres://postgres@127.0.0.1:5432`. `BENCH_KEEP=1` keeps the scratch databases.

use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use chrono::NaiveDate;
use finesettle::domain::{FencingToken, TaskName};
use finesettle::settlement::{self, DateStatus, RunContext, Trigger};
use finesettle::store::database;
use sqlx::{AssertSqlSafe, PgPool};
use tokio_util::sync::CancellationToken;

#[path = "common/mod.rs"]
mod common;
use common::{Scratch, env_or, ms, per_second};

const TASK: TaskName = TaskName::from_static("settle-fines");
const DB_SEED: &str = "finesettle_bench_settle_seed";
const DB_A: &str = "finesettle_bench_settle_a";
const DB_B: &str = "finesettle_bench_settle_b";
/// The minimal-schema reference: its seed and its round copy.
const DB_MIN_SEED: &str = "finesettle_bench_settle_min_seed";
const DB_MIN: &str = "finesettle_bench_settle_min";
/// The business date settled: a month end, so that accrue and settle both handle every fine.
const DATE: &str = "2026-03-31";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // Logs on stderr, filtered by RUST_LOG (the script sets `warn`; `finesettle=debug` shows
    // every batch).
    finesettle::telemetry::init();
    let loans: i64 = env_or("BENCH_LOANS", 1_000_000)?;
    let batch_size: i64 = env_or("BENCH_BATCH_SIZE", 20_000)?;
    let rounds: usize = env_or("BENCH_ROUNDS", 3)?;
    let imports: i64 = env_or("BENCH_IMPORTS", 10_000)?;
    let extras = !std::env::var("BENCH_EXTRAS").is_ok_and(|v| v == "0");
    let concurrent = std::env::var("BENCH_MODE").is_ok_and(|v| v == "side-by-side");
    let contract = !std::env::var("BENCH_CONTRACT").is_ok_and(|v| v == "0");
    let scratch = Scratch::from_env();
    let date: NaiveDate = DATE.parse()?;

    println!("seeding {loans} loans into {DB_SEED} and {DB_MIN_SEED} ...");
    let seeded = Instant::now();
    let pool = scratch.fresh(DB_SEED, None, 4).await?;
    // The schema once the release has rolled: its contract step too (`finesettle migrate
    // --contract`). BENCH_CONTRACT=0 measures the upgrade window (expand migrations only).
    if contract {
        database::migrate_contract(&pool).await?;
    } else {
        database::migrate(&pool).await?;
    }
    println!(
        "finesettle's schema: {}",
        if contract {
            "after the contract step"
        } else {
            "expand migrations only (BENCH_CONTRACT=0)"
        }
    );
    seed(&pool, loans).await?;
    let candidates: i64 = sqlx::query_scalar(
        "select count(*) from loan where due_on < $1 and (returned_on is null or returned_on >= date_trunc('month', $1)::date and returned_on > due_on)",
    )
    .bind(date)
    .fetch_one(&pool)
    .await?;
    pool.close().await;
    let pool = scratch.fresh(DB_MIN_SEED, None, 4).await?;
    seed_minimal(&pool, loans).await?;
    pool.close().await;
    println!("seeded in {:.1} s", seeded.elapsed().as_secs_f64());

    let ctx = RunContext {
        task_name: TASK,
        fencing_token: FencingToken(7),
        instance_id: "bench".to_owned(),
        trigger: Trigger::Manual,
        // Months from January on: the imports of (d) owe fines for January and February.
        start_date: NaiveDate::from_ymd_opt(2026, 1, 1).context("a valid date")?,
        business_tz: chrono_tz::Asia::Shanghai,
        batch_size,
        statement_limits: Default::default(),
    };
    let never = CancellationToken::new();
    let mut results = Vec::new();
    let mut last_a = None;
    for round in 0..rounds {
        // Fresh identical copies each round. One side after the other (the default), rotating
        // which goes first, so that a change in machine load does not always favour the same
        // side. Side by side (BENCH_MODE=side-by-side), all run at the same time, one backend
        // each: all see the same machine load, but they also compete for the same buffer cache.
        let pool_a = scratch.fresh(DB_A, Some(DB_SEED), 4).await?;
        let pool_b = scratch.fresh(DB_B, Some(DB_SEED), 4).await?;
        let pool_m = scratch.fresh(DB_MIN, Some(DB_MIN_SEED), 4).await?;
        for pool in [&pool_a, &pool_b, &pool_m] {
            warm_up(pool).await?;
        }
        let temp_before = temp_bytes(&pool_a, DB_A).await?;
        let (ours, hand, min) = if concurrent {
            checkpoint(&pool_a).await?;
            let (ours, hand, min) = tokio::join!(
                ours(&pool_a, &ctx, date, &never),
                hand_written(&pool_b, date),
                minimal(&pool_m, date, batch_size)
            );
            (ours?, hand?, min?)
        } else {
            let (mut ours_t, mut hand_t, mut min_t) = (None, None, None);
            for side in 0..3 {
                match (side + round) % 3 {
                    0 => {
                        checkpoint(&pool_a).await?;
                        let before = Io::now(&pool_a).await?;
                        ours_t = Some(ours(&pool_a, &ctx, date, &never).await?);
                        Io::now(&pool_a).await?.since(&before).print(round, "finesettle");
                    }
                    1 => {
                        checkpoint(&pool_b).await?;
                        let before = Io::now(&pool_b).await?;
                        hand_t = Some(hand_written(&pool_b, date).await?);
                        Io::now(&pool_b).await?.since(&before).print(round, "hand-written SQL");
                    }
                    _ => {
                        checkpoint(&pool_m).await?;
                        let before = Io::now(&pool_m).await?;
                        min_t = Some(minimal(&pool_m, date, batch_size).await?);
                        Io::now(&pool_m).await?.since(&before).print(round, "minimal schema");
                    }
                }
            }
            (ours_t.context("ran")?, hand_t.context("ran")?, min_t.context("ran")?)
        };
        let temp = temp_bytes(&pool_a, DB_A).await? - temp_before;
        let digest = result_digest(&pool_a).await?;
        ensure!(
            digest == result_digest(&pool_b).await?,
            "finesettle and the hand-written SQL disagree on the fines or the ledger"
        );
        ensure!(
            digest == result_digest(&pool_m).await?,
            "finesettle and the minimal schema disagree on the fines or the ledger"
        );
        println!(
            "round {}: finesettle {:.0} ms, hand-written {:.0} ms, minimal schema {:.0} ms; \
             finesettle's database wrote {} temporary bytes",
            round + 1,
            ms(ours.total.as_secs_f64()),
            ms(hand.total.as_secs_f64()),
            ms(min.total.as_secs_f64()),
            temp
        );
        results.push(Round { ours, hand, min, temp });
        pool_b.close().await;
        pool_m.close().await;
        if let Some(previous) = last_a.replace(pool_a) {
            previous.close().await;
        }
    }
    print_results(loans, candidates, batch_size, concurrent, &results);
    println!(
        "peak resident memory of this process (VmHWM, which ran finesettle's side): {}",
        peak_memory()
    );
    if !extras {
        if let Some(pool) = last_a {
            pool.close().await;
        }
        return scratch.clean_up(&[DB_A, DB_B, DB_MIN, DB_SEED, DB_MIN_SEED]).await;
    }
    let pool_a = last_a.context("at least one round")?;

    // (c) the rerun of the settled date, by a newer holder
    sqlx::query("update task_lock set fencing_token = 8 where task_name = $1")
        .bind(TASK)
        .execute(&pool_a)
        .await?;
    let before = row_versions(&pool_a).await?;
    let rerun_ctx = RunContext {
        fencing_token: FencingToken(8),
        ..ctx.clone()
    };
    let rerun_started = Instant::now();
    let mut tx = pool_a.begin().await?;
    let rerun = settlement::settle_date(&mut tx, &rerun_ctx, date, &never).await?;
    tx.commit().await?;
    let rerun_time = rerun_started.elapsed();
    let after = row_versions(&pool_a).await?;
    // Through the walk the date is not even run again: it already has its SUCCESS.
    let walk_rerun = settlement::settle_dates(&pool_a, &rerun_ctx, &[date], &never, &never, ()).await;

    println!();
    println!(
        "(c) rerun of the settled date {DATE} (settle_date, fencing token 8): {:.0} ms, wrote {} rows \
         (accrued {}, settled {}, voided {})",
        ms(rerun_time.as_secs_f64()),
        rerun.affected_rows(),
        rerun.accrued,
        rerun.settled,
        rerun.voided
    );
    print_digest("fine_record", before.fines, &before.fine_digest, &after.fine_digest);
    print_digest(
        "ledger_entry",
        before.entries,
        &before.ledger_digest,
        &after.ledger_digest,
    );
    println!(
        "    through the walk (settle_dates): {:?} in {:.1} ms",
        walk_rerun.outcomes[0].status,
        ms(walk_rerun.outcomes[0].duration.as_secs_f64())
    );
    ensure!(before == after, "the rerun changed rows");
    pool_a.close().await;

    // (d) the date after back-dated imports, on a fresh copy
    let pool_a = scratch.fresh(DB_A, Some(DB_SEED), 4).await?;
    import_loans(&pool_a, imports).await?;
    warm_up(&pool_a).await?;
    checkpoint(&pool_a).await?;
    let with_imports = ours(&pool_a, &ctx, date, &never).await?;
    let earlier: i64 = sqlx::query_scalar("select count(*) from fine_record where settle_month < date '2026-03-01'")
        .fetch_one(&pool_a)
        .await?;
    let best_without = results
        .iter()
        .map(|r| r.ours.total)
        .min()
        .context("at least one round")?;
    println!();
    println!(
        "(d) {DATE} after {imports} back-dated imports: {:.0} ms (best round without imports {:.0} ms, \
         +{:.0} ms, {:.3} ms per import); accrued {} fines, {earlier} of them for January and February; \
         settled {}",
        ms(with_imports.total.as_secs_f64()),
        ms(best_without.as_secs_f64()),
        ms(with_imports.total.saturating_sub(best_without).as_secs_f64()),
        ms(with_imports.total.saturating_sub(best_without).as_secs_f64()) / imports.max(1) as f64,
        with_imports.accrued,
        with_imports.settled
    );
    ensure!(
        earlier > 0 || imports == 0,
        "the imports' earlier months were not accrued"
    );
    pool_a.close().await;
    scratch.clean_up(&[DB_A, DB_B, DB_MIN, DB_SEED, DB_MIN_SEED]).await
}

/// (a) finesettle: the walk over the one date, with its records, fence and batches.
async fn ours(pool: &PgPool, ctx: &RunContext, date: NaiveDate, never: &CancellationToken) -> anyhow::Result<Timings> {
    let report = settlement::settle_dates(pool, ctx, &[date], never, never, ()).await;
    let outcome = report.outcomes.first().context("the walk ran the date")?;
    ensure!(
        outcome.status == DateStatus::Success,
        "our run failed: {:?}",
        outcome.error
    );
    let counts = outcome.counts.context("a successful date has counts")?;
    Ok(Timings {
        accrued: counts.accrued,
        settled: counts.settled,
        accrue: counts.accrue_time,
        settle: counts.settle_time,
        total: outcome.duration,
    })
}

struct Timings {
    accrued: i64,
    settled: i64,
    accrue: Duration,
    settle: Duration,
    total: Duration,
}

impl Timings {
    fn accrue_rate(&self) -> f64 {
        per_second(self.accrued as f64, self.accrue)
    }
    fn settle_rate(&self) -> f64 {
        per_second(self.settled as f64, self.settle)
    }
    /// Fines carried through both steps per second of the whole date, commit included.
    fn date_rate(&self) -> f64 {
        per_second(self.settled as f64, self.total)
    }
}

/// One round: the three sides on fresh copies, and the temporary bytes finesettle's database
/// wrote meanwhile (`pg_stat_database.temp_bytes`).
struct Round {
    ours: Timings,
    hand: Timings,
    min: Timings,
    temp: i64,
}

fn print_results(loans: i64, candidates: i64, batch_size: i64, concurrent: bool, results: &[Round]) {
    println!();
    println!(
        "settlement of {DATE} over {loans} loans, {candidates} of them with overdue days in the month \
         ({:.0}%); batch size {batch_size}; {} rounds on fresh copies, {}",
        100.0 * candidates as f64 / loans as f64,
        results.len(),
        if concurrent {
            "all sides at the same time"
        } else {
            "one side after the other"
        }
    );
    println!(
        "{:<30} {:>9} {:>10} {:>13} {:>9} {:>10} {:>13} {:>10} {:>13}",
        "", "accrued", "accrue ms", "accrue rows/s", "settled", "settle ms", "settle rows/s", "date ms", "date fines/s"
    );
    for (round, r) in results.iter().enumerate() {
        for (name, t) in [
            ("finesettle", &r.ours),
            ("hand-written SQL", &r.hand),
            ("minimal schema", &r.min),
        ] {
            println!(
                "{:<30} {:>9} {:>10.0} {:>13.0} {:>9} {:>10.0} {:>13.0} {:>10.0} {:>13.0}",
                format!("round {} {name}", round + 1),
                t.accrued,
                ms(t.accrue.as_secs_f64()),
                t.accrue_rate(),
                t.settled,
                ms(t.settle.as_secs_f64()),
                t.settle_rate(),
                ms(t.total.as_secs_f64()),
                t.date_rate()
            );
        }
    }
    let best = |pick: fn(&Timings) -> f64, of: fn(&Round) -> &Timings| {
        results.iter().map(|r| pick(of(r))).fold(0.0_f64, f64::max)
    };
    for (name, of) in [
        ("finesettle", (|r: &Round| &r.ours) as fn(&Round) -> &Timings),
        ("hand-written", |r: &Round| &r.hand),
        ("minimal schema", |r: &Round| &r.min),
    ] {
        println!(
            "best of {name}: accrue {:.0} rows/s, settle {:.0} rows/s, date {:.0} fines/s",
            best(Timings::accrue_rate, of),
            best(Timings::settle_rate, of),
            best(Timings::date_rate, of),
        );
    }
    for (name, target, of) in [
        (
            "hand-written SQL on our schema",
            0.95,
            (|r: &Round| &r.hand) as fn(&Round) -> &Timings,
        ),
        ("the minimal schema", 0.5, |r: &Round| &r.min),
    ] {
        let ratio = |pick: fn(&Timings) -> f64| best(pick, |r| &r.ours) / best(pick, of);
        println!(
            "ratio finesettle / {name} (best of each): accrue {:.2}, settle {:.2}, whole date {:.2} (target >= {target:.2})",
            ratio(Timings::accrue_rate),
            ratio(Timings::settle_rate),
            ratio(Timings::date_rate)
        );
        for (round, r) in results.iter().enumerate() {
            let other = of(r);
            println!(
                "  round {}: accrue {:.2}, settle {:.2}, whole date {:.2}",
                round + 1,
                r.ours.accrue_rate() / other.accrue_rate(),
                r.ours.settle_rate() / other.settle_rate(),
                r.ours.date_rate() / other.date_rate()
            );
        }
    }
    let temp = results.iter().map(|r| r.temp).max().unwrap_or(0);
    println!(
        "temporary space written by finesettle's database in a round (pg_stat_database.temp_bytes delta, largest): {temp} bytes"
    );
}

/// The peak resident set of this process (`VmHWM` in /proc/self/status), which ran finesettle's
/// side as a replica would.
fn peak_memory() -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .map(|l| l["VmHWM:".len()..].trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".to_owned())
}

/// `pg_stat_database.temp_bytes` of `name`. The counters of a backend reach the shared statistics
/// when it is idle for a moment, so it waits for that first.
async fn temp_bytes(pool: &PgPool, name: &str) -> anyhow::Result<i64> {
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let bytes: i64 = sqlx::query_scalar("select temp_bytes from pg_stat_database where datname = $1")
        .bind(name)
        .fetch_one(pool)
        .await?;
    Ok(bytes)
}

/// The same work on a minimal schema (`seed_minimal`): the accrual upsert on the unique
/// `(loan_id, settle_month)` key, one statement; then the settlement
/// of PENDING fines in keyset batches of `batch_size` along the partial index, each fine with
/// one CHARGE; one transaction. No fence, records, foreign keys, triggers or other indexes: what
/// the hardware does with the work itself.
async fn minimal(pool: &PgPool, date: NaiveDate, batch_size: i64) -> anyhow::Result<Timings> {
    let started = Instant::now();
    let mut tx = pool.begin().await?;
    let month = finesettle::domain::month_start(date);
    let ended_before = finesettle::domain::month_start(date.succ_opt().context("a next day")?);
    let t = Instant::now();
    // One statement: the loans have nothing but their primary key, so every way to the
    // candidates reads the whole table, and one pass is the fastest.
    let accrued = sqlx::query(
        r#"
        insert into fine_record
            (loan_id, member_id, settle_month, overdue_days, amount_cents, accrued_through, fencing_token)
        select id, member_id, $2, last_day - first_day + 1, (last_day - first_day + 1) * daily_fine_cents, last_day, 7
        from (select l.id, l.member_id, l.daily_fine_cents,
                     greatest(l.due_on + 1, $2::date) as first_day,
                     least($1::date, l.returned_on) as last_day
              from loan l) c
        where last_day >= first_day
        on conflict (loan_id, settle_month) do update
        set overdue_days = excluded.overdue_days, amount_cents = excluded.amount_cents,
            accrued_through = excluded.accrued_through, fencing_token = excluded.fencing_token
        where fine_record.status = 'PENDING'
          and fine_record.accrued_through < excluded.accrued_through
        "#,
    )
    .bind(date)
    .bind(month)
    .execute(&mut *tx)
    .await?
    .rows_affected();
    let accrued = i64::try_from(accrued)?;
    let accrue = t.elapsed();
    let t = Instant::now();
    let mut settled = 0_i64;
    let mut after = (NaiveDate::from_ymd_opt(1, 1, 1).context("a valid date")?, 0_i64);
    sqlx::raw_sql("set local enable_sort = off").execute(&mut *tx).await?;
    loop {
        let (last_month, last_loan, picked, written): (Option<NaiveDate>, Option<i64>, i64, i64) = sqlx::query_as(
            r#"
            with picked as (
                select f.id, f.settle_month, f.loan_id, l.daily_fine_cents,
                       greatest(l.due_on + 1, f.settle_month) as first_day,
                       least((f.settle_month + interval '1 month')::date - 1, l.returned_on) as last_day
                from fine_record f
                join loan l on l.id = f.loan_id
                where f.status = 'PENDING'
                  and (f.settle_month, f.loan_id) > ($1::date, $2::bigint)
                  and (f.settle_month < $5 or l.returned_on <= $4)
                order by f.settle_month, f.loan_id
                limit $3
            ),
            changed as (
                update fine_record f
                set status = 'SETTLED', settled_at = now(), fencing_token = 7,
                    overdue_days = p.last_day - p.first_day + 1,
                    amount_cents = (p.last_day - p.first_day + 1) * p.daily_fine_cents,
                    accrued_through = p.last_day
                from picked p
                where f.id = p.id
                returning f.id, f.member_id, f.amount_cents
            ),
            charged as (
                insert into ledger_entry (member_id, fine_id, kind, amount_cents, fencing_token)
                select member_id, id, 'CHARGE', amount_cents, 7 from changed where amount_cents > 0
            ),
            last_month as (select max(settle_month) as settle_month from picked)
            select (select settle_month from last_month),
                   (select max(loan_id) from picked where settle_month = (select settle_month from last_month)),
                   (select count(*) from picked),
                   (select count(*) from changed)
            "#,
        )
        .bind(after.0)
        .bind(after.1)
        .bind(batch_size)
        .bind(date)
        .bind(ended_before)
        .persistent(false)
        .fetch_one(&mut *tx)
        .await?;
        settled += written;
        match last_month.zip(last_loan) {
            Some(last) if picked == batch_size => after = last,
            _ => break,
        }
    }
    let settle = t.elapsed();
    tx.commit().await?;
    Ok(Timings {
        accrued,
        settled,
        accrue,
        settle,
        total: started.elapsed(),
    })
}

/// The same work as one date of finesettle, as two set-based statements in one transaction.
/// One table's checksum before and after the rerun, and whether it moved.
fn print_digest(table: &str, rows: i64, before: &str, after: &str) {
    let verdict = if before == after { "unchanged" } else { "CHANGED" };
    println!("    {table}: {rows} rows, checksum incl. xmin before {before} after {after} -> {verdict}");
}

async fn hand_written(pool: &PgPool, date: NaiveDate) -> anyhow::Result<Timings> {
    let started = Instant::now();
    let mut tx = pool.begin().await?;
    let t = Instant::now();
    let accrued = sqlx::query(
        r#"
        insert into fine_record
            (loan_id, member_id, settle_month, overdue_days, amount_cents, accrued_through, fencing_token)
        select l.id, l.member_id, date_trunc('month', $1::date)::date,
               least($1, l.returned_on) - greatest(l.due_on + 1, date_trunc('month', $1::date)::date) + 1,
               (least($1, l.returned_on) - greatest(l.due_on + 1, date_trunc('month', $1::date)::date) + 1)
                   * l.daily_fine_cents,
               least($1, l.returned_on), 7
        from loan l
        where l.due_on < $1
          and (l.returned_on is null
               or l.returned_on >= greatest(l.due_on + 1, date_trunc('month', $1::date)::date))
        on conflict (loan_id, settle_month) do update
        set overdue_days = excluded.overdue_days, amount_cents = excluded.amount_cents,
            accrued_through = excluded.accrued_through, fencing_token = excluded.fencing_token
        where fine_record.status = 'PENDING' and fine_record.accrued_through < excluded.accrued_through
        "#,
    )
    .bind(date)
    .execute(&mut *tx)
    .await?
    .rows_affected();
    let accrue = t.elapsed();
    let t = Instant::now();
    let settled: i64 = sqlx::query_scalar(
        r#"
        with settled as (
            update fine_record f
            set status = 'SETTLED', settled_at = now(), fencing_token = 7,
                overdue_days = least((f.settle_month + interval '1 month')::date - 1, l.returned_on)
                               - greatest(l.due_on + 1, f.settle_month) + 1,
                amount_cents = (least((f.settle_month + interval '1 month')::date - 1, l.returned_on)
                                - greatest(l.due_on + 1, f.settle_month) + 1) * l.daily_fine_cents,
                accrued_through = least((f.settle_month + interval '1 month')::date - 1, l.returned_on)
            from loan l
            where l.id = f.loan_id and f.status = 'PENDING'
              and (f.settle_month < date_trunc('month', $1::date + 1)::date or l.returned_on <= $1)
            returning f.id, f.member_id, f.amount_cents, f.settle_month, f.loan_id
        ),
        -- the same work as finesettle's: the settled fines leave the queue of PENDING fines
        unqueued as (
            delete from fine_pending q using settled s
            where q.settle_month = s.settle_month and q.loan_id = s.loan_id
        ),
        charged as (
            insert into ledger_entry (member_id, fine_id, kind, amount_cents, fencing_token)
            select member_id, id, 'CHARGE', amount_cents, 7 from settled where amount_cents > 0
            on conflict (fine_id, kind) where fine_id is not null do nothing
        )
        select count(*) from settled
        "#,
    )
    .bind(date)
    .fetch_one(&mut *tx)
    .await?;
    let settle = t.elapsed();
    tx.commit().await?;
    Ok(Timings {
        accrued: i64::try_from(accrued)?,
        settled,
        accrue,
        settle,
        total: started.elapsed(),
    })
}

/// 100,000 members, one book per loan (an open loan needs a copy of its own), and the loans:
/// - 25% open and overdue since a day between Feb 1 and Mar 30;
/// - 5% returned in March, one to nine days late;
/// - 35% open and not yet due on the date;
/// - 35% returned on time in January or February.
///
/// Written with triggers and foreign-key checks off (`session_replication_role = replica`): the
/// rows are valid by construction (every member and book exists), and ten million loans load in
/// a fraction of the time; the queue of recorded loans stays empty, as after earlier nights.
async fn seed(pool: &PgPool, loans: i64) -> anyhow::Result<()> {
    let sql = format!(
        r#"
        set session_replication_role = replica;
        insert into member (name, email)
        select 'member ' || g, 'member' || g || '@example.org' from generate_series(1, 100000) g;
        insert into book (title) select 'book ' || g from generate_series(1, {loans}) g;
        {loans_sql}
        insert into task_lock (task_name, locked_until, locked_at, locked_by, owner_token, fencing_token)
        values ('{TASK}', now() + interval '1 day', now(), 'bench', gen_random_uuid(), 7);
        -- history earlier nights accrued: no loan waits to be accrued (see the module docs)
        truncate loan_change;
        set session_replication_role = default;
        "#,
        loans_sql = seed_loans(loans)
    );
    sqlx::raw_sql(AssertSqlSafe(sql)).execute(pool).await?;
    sqlx::raw_sql("vacuum analyze").execute(pool).await?;
    Ok(())
}

/// The loans of [`seed`], the same rows on either schema.
fn seed_loans(loans: i64) -> String {
    format!(
        r#"
        insert into loan (member_id, book_id, borrowed_on, due_on, returned_at, returned_on, daily_fine_cents)
        select 1 + g % 100000, g, due_on - 14, due_on,
               (returned_on + time '12:00') at time zone 'Asia/Shanghai', returned_on, 10 + g % 91
        from (
            select g,
                   case when b < 25 then date '2026-03-30' - (g * 7 % 58)
                        when b < 30 then date '2026-02-28' + (g % 20)
                        when b < 65 then date '2026-03-31' + (g % 20)
                        else date '2026-01-15' + (g % 50) end as due_on,
                   case when b < 25 then null
                        when b < 30 then date '2026-02-28' + (g % 20) + 1 + (g % 9)
                        when b < 65 then null
                        else date '2026-01-15' + (g % 50) - (g % 14) end as returned_on
            from (select g, g % 100 as b from generate_series(1, {loans}) g) s
        ) x;
        "#
    )
}

/// The minimal schema: the same columns as finesettle's tables, but only the primary keys, the
/// unique `(loan_id, settle_month)` key of the accrual's upsert and the partial index of PENDING
/// fines the settlement walks; no foreign key, check, trigger or other index. Same members and
/// loans as [`seed`].
async fn seed_minimal(pool: &PgPool, loans: i64) -> anyhow::Result<()> {
    let sql = format!(
        r#"
        create table member (
            id bigint generated always as identity primary key, name text not null,
            email text not null, created_at timestamptz not null default now());
        create table loan (
            id bigint generated always as identity primary key, member_id bigint not null,
            book_id bigint not null, borrowed_on date not null, due_on date not null,
            returned_at timestamptz, returned_on date, daily_fine_cents bigint not null,
            created_at timestamptz not null default now(), updated_at timestamptz not null default now());
        create table fine_record (
            id bigint generated always as identity primary key, loan_id bigint not null,
            member_id bigint not null, settle_month date not null, overdue_days integer not null,
            amount_cents bigint not null, accrued_through date not null,
            status text not null default 'PENDING', settled_at timestamptz, voided_at timestamptz,
            void_reason text, fencing_token bigint not null,
            created_at timestamptz not null default now(), updated_at timestamptz not null default now(),
            unique (loan_id, settle_month));
        create index fine_record_pending on fine_record (settle_month, loan_id) where status = 'PENDING';
        create table ledger_entry (
            id bigint generated always as identity primary key, member_id bigint not null,
            fine_id bigint, kind text not null, amount_cents bigint not null,
            fencing_token bigint not null default 0, created_at timestamptz not null default now());
        insert into member (name, email)
        select 'member ' || g, 'member' || g || '@example.org' from generate_series(1, 100000) g;
        {loans_sql}
        "#,
        loans_sql = seed_loans(loans)
    );
    sqlx::raw_sql(AssertSqlSafe(sql)).execute(pool).await?;
    sqlx::raw_sql("vacuum analyze").execute(pool).await?;
    Ok(())
}

/// `count` loans recorded now with past dates, each with a book of its own: due between January 5
/// and February 24, half of them still out, the others returned in February or March.
async fn import_loans(pool: &PgPool, count: i64) -> anyhow::Result<()> {
    let sql = format!(
        r#"
        with books as (
            insert into book (title) select 'imported ' || g from generate_series(1, {count}) g returning id
        )
        insert into loan (member_id, book_id, borrowed_on, due_on, returned_at, returned_on, daily_fine_cents)
        select 1 + b.id % 100000, b.id, x.due_on - 14, x.due_on,
               (x.returned_on + time '12:00') at time zone 'Asia/Shanghai', x.returned_on, 50
        from books b
        cross join lateral (
            select date '2026-01-05' + (b.id % 50)::int as due_on,
                   case when b.id % 2 = 0 then null
                        else date '2026-02-25' + (b.id % 30)::int end as returned_on
        ) x
        "#
    );
    sqlx::raw_sql(AssertSqlSafe(sql)).execute(pool).await?;
    sqlx::raw_sql("analyze").execute(pool).await?;
    Ok(())
}

/// What one side cost the server besides time: WAL (records, full-page images, bytes, flushes),
/// checkpoints and the buffers backends had to write out themselves (all cluster-wide, so another
/// session's work in the same seconds counts too), and the side's database's block reads (from
/// the kernel) and hits (in shared buffers). Sequential mode only: side by side they would mix.
#[derive(Debug, Clone, Copy)]
struct Io {
    wal_records: i64,
    wal_fpi: i64,
    wal_bytes: i64,
    wal_sync: i64,
    checkpoints: i64,
    buffers_backend: i64,
    blks_read: i64,
    blks_hit: i64,
}

impl Io {
    /// The counters now. A backend's counters reach the shared statistics when it has been idle
    /// for a moment, so it waits for that first (as [`temp_bytes`] does).
    async fn now(pool: &PgPool) -> anyhow::Result<Io> {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let row: (i64, i64, i64, i64, i64, i64, i64, i64) = sqlx::query_as(
            "select w.wal_records, w.wal_fpi, w.wal_bytes::bigint, w.wal_sync, \
             b.checkpoints_timed + b.checkpoints_req, b.buffers_backend, d.blks_read, d.blks_hit \
             from pg_stat_wal w, pg_stat_bgwriter b, pg_stat_database d where d.datname = current_database()",
        )
        .fetch_one(pool)
        .await?;
        Ok(Io {
            wal_records: row.0,
            wal_fpi: row.1,
            wal_bytes: row.2,
            wal_sync: row.3,
            checkpoints: row.4,
            buffers_backend: row.5,
            blks_read: row.6,
            blks_hit: row.7,
        })
    }

    fn since(&self, before: &Io) -> Io {
        Io {
            wal_records: self.wal_records - before.wal_records,
            wal_fpi: self.wal_fpi - before.wal_fpi,
            wal_bytes: self.wal_bytes - before.wal_bytes,
            wal_sync: self.wal_sync - before.wal_sync,
            checkpoints: self.checkpoints - before.checkpoints,
            buffers_backend: self.buffers_backend - before.buffers_backend,
            blks_read: self.blks_read - before.blks_read,
            blks_hit: self.blks_hit - before.blks_hit,
        }
    }

    fn print(&self, round: usize, side: &str) {
        println!(
            "  round {} {side}: WAL {} records, {} full-page images, {:.0} MB, {} flushes; {} checkpoints; \
             {} buffers written by backends; blocks read {} hit {}",
            round + 1,
            self.wal_records,
            self.wal_fpi,
            self.wal_bytes as f64 / 1e6,
            self.wal_sync,
            self.checkpoints,
            self.buffers_backend,
            self.blks_read,
            self.blks_hit
        );
    }
}

/// Reads the tables once so that both copies start with the same warm caches.
async fn warm_up(pool: &PgPool) -> anyhow::Result<()> {
    sqlx::raw_sql("select count(*), sum(daily_fine_cents) from loan; select count(*) from member")
        .execute(pool)
        .await?;
    Ok(())
}

/// Flushes dirty pages so that neither run pays for the other's writes.
async fn checkpoint(pool: &PgPool) -> anyhow::Result<()> {
    sqlx::raw_sql("checkpoint").execute(pool).await?;
    Ok(())
}

/// Fines and ledger entries by business key (no ids, timestamps or tokens): equal on both copies
/// when both did the same work.
async fn result_digest(pool: &PgPool) -> anyhow::Result<(String, String)> {
    let fines: String = sqlx::query_scalar(
        "select coalesce(md5(string_agg(concat_ws('|', loan_id, settle_month, overdue_days, amount_cents, \
         accrued_through, status), ',' order by loan_id, settle_month)), '') from fine_record",
    )
    .fetch_one(pool)
    .await?;
    let ledger: String = sqlx::query_scalar(
        "select coalesce(md5(string_agg(concat_ws('|', f.loan_id, f.settle_month, e.kind, e.amount_cents), ',' \
         order by f.loan_id, f.settle_month, e.kind)), '') from ledger_entry e join fine_record f on f.id = e.fine_id",
    )
    .fetch_one(pool)
    .await?;
    Ok((fines, ledger))
}

/// Every column of every fine and ledger row plus its row version (`xmin`): any write, even one
/// that stores the same values, changes it.
#[derive(Debug, PartialEq, Eq)]
struct RowVersions {
    fines: i64,
    fine_digest: String,
    entries: i64,
    ledger_digest: String,
}

async fn row_versions(pool: &PgPool) -> anyhow::Result<RowVersions> {
    let (fines, fine_digest): (i64, String) = sqlx::query_as(
        "select count(*), coalesce(md5(string_agg(concat_ws('|', xmin, f.*), ',' order by id)), '') \
         from fine_record f",
    )
    .fetch_one(pool)
    .await?;
    let (entries, ledger_digest): (i64, String) = sqlx::query_as(
        "select count(*), coalesce(md5(string_agg(concat_ws('|', xmin, e.*), ',' order by id)), '') \
         from ledger_entry e",
    )
    .fetch_one(pool)
    .await?;
    Ok(RowVersions {
        fines,
        fine_digest,
        entries,
        ledger_digest,
    })
}

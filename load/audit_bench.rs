//! Benchmark: `finesettle audit` of one month over a million loans, in loans per second, next to
//! a hand-written one-statement comparison of the same facts.
//!
//! Run with `load/bench-audit` (or `cargo run --release --example audit_bench`).
//!
//! 1. Seeds a scratch database `finesettle_bench_audit` with `finesettle seed`'s generator
//!    (`BENCH_LOANS` loans, default 1,000,000, borrowed over the 90 days before today, about 30%
//!    open and overdue) and settles the last day of the month before today's with
//!    `settlement::settle_dates` (the job's start date), so that month is final.
//! 2. Each of `BENCH_ROUNDS` rounds (default 3) runs (a) `audit::audit_month` over that month:
//!    the finality check and the month's facts streamed in one repeatable-read transaction, every
//!    fine recomputed and judged in Rust, the report, the alert; and (b) one hand-written
//!    statement that recomputes the fines in SQL and only counts the differences (no rows sent,
//!    no corrections told apart, no report). Alternating which goes first.
//! 3. Deletes ten CHARGEs and audits again: exactly those ten must be reported, and the AUDIT
//!    alert raised.
//!
//! The server comes from `DATABASE_URL` (its database name is replaced), default
//! `postgres://postgres@127.0.0.1:5432`. `BENCH_KEEP=1` keeps the scratch database.

use std::time::{Duration, Instant};

use anyhow::ensure;
use chrono::{Days, NaiveDate};
use finesettle::audit::{AuditConfig, AuditReport, audit_month};
use finesettle::domain::{FencingToken, TaskName, format_month, month_end, month_start};
use finesettle::seed::{Policy, SeedOptions};
use finesettle::settlement::{self, DateStatus, RunContext, Trigger};
use finesettle::store::database;
use indicatif::ProgressBar;
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;

#[path = "common/mod.rs"]
mod common;
use common::{Scratch, env_or, ms, per_second};

const TASK: TaskName = TaskName::from_static("settle-fines");
const DB: &str = "finesettle_bench_audit";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    finesettle::telemetry::init();
    let loans: usize = env_or("BENCH_LOANS", 1_000_000)?;
    // Only for the settlement that makes the month final.
    let batch_size: i64 = env_or("BENCH_BATCH_SIZE", 20_000)?;
    let rounds: usize = env_or("BENCH_ROUNDS", 3)?;
    let scratch = Scratch::from_env();

    println!("seeding {loans} loans into {DB} ...");
    let started = Instant::now();
    let pool = scratch.fresh(DB, None, 4).await?;
    database::migrate(&pool).await?;
    let options = SeedOptions {
        members: (loans / 10).clamp(100, 100_000),
        books: loans,
        loans,
        ..SeedOptions::default()
    };
    let policy = Policy {
        business_tz: chrono_tz::Asia::Shanghai,
        daily_fine_cents: 50,
    };
    let seeded = finesettle::seed::seed(&pool, policy, &options, &ProgressBar::hidden()).await?;
    // The month before today's: every loan of it is known, and its last day can be settled.
    let month = month_start(month_start(seeded.today) - Days::new(1));
    let last_day = month_end(month);
    println!(
        "seeded in {:.1} s; settling {last_day} to make {} final ...",
        started.elapsed().as_secs_f64(),
        format_month(month)
    );
    let settle_time = settle(&pool, last_day, batch_size).await?;
    sqlx::raw_sql("vacuum analyze").execute(&pool).await?;
    println!("settled in {:.1} s", settle_time.as_secs_f64());

    let config = AuditConfig {
        task_name: TASK,
        configured_start: Some(last_day),
        webhook_enabled: false,
    };
    let table_loans: i64 = sqlx::query_scalar("select count(*) from loan").fetch_one(&pool).await?;
    let mut results = Vec::new();
    for round in 0..rounds {
        let (ours, hand) = if round % 2 == 0 {
            let ours = ours(&pool, &config, month).await?;
            (ours, hand_written(&pool, month).await?)
        } else {
            let hand = hand_written(&pool, month).await?;
            (ours(&pool, &config, month).await?, hand)
        };
        ensure!(
            ours.differences == 0 && hand.differences == 0,
            "a freshly settled month has differences: ours {}, hand-written {}",
            ours.differences,
            hand.differences
        );
        ensure!(
            ours.checked == hand.checked,
            "the two sides checked different loans: {} and {}",
            ours.checked,
            hand.checked
        );
        println!(
            "round {}: finesettle audit {:.0} ms, hand-written {:.0} ms",
            round + 1,
            ms(ours.time.as_secs_f64()),
            ms(hand.time.as_secs_f64())
        );
        results.push((ours, hand));
    }
    print_results(table_loans, &format_month(month), &results);

    // Ten CHARGEs lost: the audit finds exactly those, and raises the alert.
    let lost: Vec<i64> = sqlx::query_scalar(
        "delete from ledger_entry where id in (select id from ledger_entry where kind = 'CHARGE' order by id limit 10) \
         returning fine_id",
    )
    .fetch_all(&pool)
    .await?;
    let report = audit_month(&pool, &config, month).await?;
    ensure!(
        report.differences_total == lost.len() && report.alert_raised,
        "the audit missed lost CHARGEs: {report}"
    );
    println!(
        "after deleting {} CHARGEs: {} differences reported, AUDIT alert raised: {}",
        lost.len(),
        report.differences_total,
        report.alert.as_ref().map_or("", |a| a.detail.as_str())
    );

    pool.close().await;
    scratch.clean_up(&[DB]).await
}

/// Settles `date` (the job's start date) with the walk, as the nightly job would.
async fn settle(pool: &PgPool, date: NaiveDate, batch_size: i64) -> anyhow::Result<Duration> {
    sqlx::query(
        "insert into task_lock (task_name, locked_until, locked_at, locked_by, owner_token, fencing_token) \
         values ($1, now() + interval '1 day', now(), 'bench', gen_random_uuid(), 7)",
    )
    .bind(TASK)
    .execute(pool)
    .await?;
    let ctx = RunContext {
        task_name: TASK,
        fencing_token: FencingToken(7),
        instance_id: "bench".to_owned(),
        trigger: Trigger::Manual,
        start_date: date,
        business_tz: chrono_tz::Asia::Shanghai,
        batch_size,
        statement_limits: Default::default(),
    };
    let never = CancellationToken::new();
    let report = settlement::settle_dates(pool, &ctx, &[date], &never, &never, ()).await;
    let outcome = report.outcomes.first().ok_or_else(|| anyhow::anyhow!("the date ran"))?;
    ensure!(
        outcome.status == DateStatus::Success,
        "the settlement failed: {:?}",
        outcome.error
    );
    Ok(outcome.duration)
}

struct Timing {
    /// Loans that could owe a fine for the month or have one.
    checked: i64,
    fines: i64,
    differences: i64,
    time: Duration,
}

/// (a) the audit as `finesettle audit` runs it.
async fn ours(pool: &PgPool, config: &AuditConfig, month: NaiveDate) -> anyhow::Result<Timing> {
    let started = Instant::now();
    let report: AuditReport = audit_month(pool, config, month).await?;
    Ok(Timing {
        checked: report.loans_checked,
        fines: report.fines_checked,
        differences: i64::try_from(report.differences_total)?,
        time: started.elapsed(),
    })
}

/// (b) the same facts compared in one statement: expected fines computed in SQL, a full outer
/// join with the month's fines and their ledger entries, the differences counted.
async fn hand_written(pool: &PgPool, month: NaiveDate) -> anyhow::Result<Timing> {
    let started = Instant::now();
    let (checked, fines, differences): (i64, i64, i64) = sqlx::query_as(
        r#"
        with expected as (
            select l.id as loan_id, l.daily_fine_cents,
                   greatest(least($2::date, l.returned_on) - greatest(l.due_on + 1, $1::date) + 1, 0) as days
            from loan l
            where l.due_on < $2 and (l.returned_on is null or (l.returned_on >= $1 and l.returned_on > l.due_on))
        ),
        stored as (
            select f.id, f.loan_id, f.status, f.overdue_days, f.amount_cents,
                   c.amount_cents as charged, r.amount_cents as reversed
            from fine_record f
            left join ledger_entry c on c.fine_id = f.id and c.kind = 'CHARGE'
            left join ledger_entry r on r.fine_id = f.id and r.kind = 'REVERSAL'
            where f.settle_month = $1
        )
        select count(*), count(s.id),
               count(*) filter (where
                   (s.id is null and e.days > 0)
                   or s.status = 'PENDING'
                   or (s.status = 'SETTLED'
                       and ((s.overdue_days, s.amount_cents)
                               is distinct from (coalesce(e.days, 0), coalesce(e.days * e.daily_fine_cents, 0))
                            or (s.amount_cents > 0 and s.charged is distinct from s.amount_cents)
                            or s.reversed is not null))
                   or (s.status = 'VOID' and s.charged is not null and s.reversed is distinct from -s.charged))
        from expected e
        full outer join stored s on s.loan_id = e.loan_id
        "#,
    )
    .bind(month)
    .bind(month_end(month))
    .fetch_one(pool)
    .await?;
    Ok(Timing {
        checked,
        fines,
        differences,
        time: started.elapsed(),
    })
}

fn print_results(table_loans: i64, month: &str, results: &[(Timing, Timing)]) {
    println!();
    let checked = results.first().map_or(0, |r| r.0.checked);
    let fines = results.first().map_or(0, |r| r.0.fines);
    println!(
        "audit of {month} over {table_loans} loans, {checked} of them checked (could owe a fine for the month \
         or have one), {fines} fines; {} rounds",
        results.len()
    );
    println!(
        "{:<28} {:>10} {:>18} {:>18}",
        "", "ms", "checked loans/s", "table loans/s"
    );
    for (round, (ours, hand)) in results.iter().enumerate() {
        for (name, t) in [("finesettle audit", ours), ("hand-written SQL", hand)] {
            println!(
                "{:<28} {:>10.0} {:>18.0} {:>18.0}",
                format!("round {} {name}", round + 1),
                ms(t.time.as_secs_f64()),
                per_second(t.checked as f64, t.time),
                per_second(table_loans as f64, t.time)
            );
        }
    }
    let best = |of: fn(&(Timing, Timing)) -> &Timing| {
        results
            .iter()
            .map(|r| per_second(of(r).checked as f64, of(r).time))
            .fold(0.0_f64, f64::max)
    };
    let (ours, hand) = (best(|r| &r.0), best(|r| &r.1));
    println!(
        "best of each side: finesettle audit {ours:.0} checked loans/s, hand-written {hand:.0}; ratio {:.2}",
        ours / hand.max(1e-9)
    );
}

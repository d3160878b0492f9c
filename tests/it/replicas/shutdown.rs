//! Graceful shutdown: a `serve` process gets SIGTERM in the middle of a backfill started through
//! the admin API, or of a walk started by its cron.

use std::time::Duration;

use chrono::Days;
use chrono_tz::Asia::Shanghai;
use finesettle::schedule::settle_target;
use serde_json::json;

use crate::common::ADMIN_TOKEN;
use crate::common::checks::{
    Execution, assert_matches_oracle, assert_settled_exactly_once, executions, lock_expired, poll_until,
};
use crate::common::data::days;
use crate::common::oracle::Model;
use crate::common::process::{Finesettle, Signal, backfill};
use crate::common::seed::{migrated_db, recent_loans, seed, seeded_busy_range};
use crate::common::settlement::{assert_matches, fines, ledger};
use crate::common::slow::slow_dates;
use crate::replicas::cron::{once_at, whole_second_in};

/// Starts a backfill of the busy range on a `serve` process with `FINESETTLE_SHUTDOWN_GRACE` =
/// `grace`, and sends it SIGTERM while a date is half done: the date's accrual is kept waiting on
/// a fine this test has locked. Once the process logged `release_after` (it has seen the signal),
/// the fine is let go and the date goes on. Checks what every shutdown must leave: exit 0,
/// nothing RUNNING, settled dates a prefix of the range and no trace of any other date, the lock
/// released; then a later run completes the range. Answers the execution of the date that was
/// running at SIGTERM, as it ended.
async fn sigterm_in_the_middle_of_a_date(grace: &str, release_after: &str) -> Execution {
    let (database, pool, loans, (from, to), dates) = seeded_busy_range(61).await;
    let mut serve = Finesettle::new(database.url(), "replica-p")
        // Only the operator's backfill runs: no cron fire, no catch-up at start.
        .env("FINESETTLE_SCHEDULER_ENABLED", "false")
        .env("FINESETTLE_LOCK_AT_LEAST_FOR", "0s")
        .env("FINESETTLE_SETTLE_BATCH_SIZE", "100")
        .env("FINESETTLE_SHUTDOWN_GRACE", grace)
        .spawn(&["serve"]);
    let base = serve.base_url().await;

    finesettle::tls::install_crypto_provider();
    let started = reqwest::Client::new()
        .post(format!("{base}/api/v1/jobs/settle-fines/backfill"))
        .bearer_auth(ADMIN_TOKEN)
        .json(&json!({ "from": from, "to": to }))
        .send()
        .await
        .expect("the backfill request is answered");
    assert_eq!(started.status().as_u16(), 202);
    let started: serde_json::Value = started.json().await.unwrap();
    assert_eq!(
        started["dates"].as_array().map(Vec::len),
        Some(dates.len()),
        "{started}"
    );

    // After the first date, hold the February fine of an open loan: every later February date
    // moves it forward, so the next one waits for it in the middle of its accrual.
    poll_until("the first date to settle", Duration::from_secs(60), async || {
        serve.assert_running();
        executions(&pool).await.into_iter().find(|e| e.status == "SUCCESS")
    })
    .await;
    let mut holder = pool.begin().await.unwrap();
    sqlx::query(
        "select f.id from fine_record f join loan l on l.id = f.loan_id \
         where f.settle_month = '2026-02-01' and f.status = 'PENDING' and l.returned_on is null \
         order by f.id limit 1 for update of f",
    )
    .fetch_one(&mut *holder)
    .await
    .expect("an open loan with a February fine");
    let running = poll_until(
        "a date to wait for the held fine",
        Duration::from_secs(60),
        async || {
            serve.assert_running();
            let waiting: i64 = sqlx::query_scalar(
                "select count(*) from pg_stat_activity \
             where datname = current_database() and wait_event_type = 'Lock'",
            )
            .fetch_one(&pool)
            .await
            .unwrap();
            let running = executions(&pool).await.into_iter().find(|e| e.status == "RUNNING");
            running.filter(|_| waiting > 0)
        },
    )
    .await;

    serve.signal(Signal::Term);
    serve.log_line(release_after, Duration::from_secs(30)).await;
    holder.rollback().await.unwrap();
    let stopped = serve.wait(Duration::from_secs(60)).await;
    stopped.assert_success();

    // Dates settled before the signal and perhaps the running one; nothing after it, nothing
    // left RUNNING.
    let after_stop = executions(&pool).await;
    assert!(after_stop.iter().all(|e| e.status != "RUNNING"), "{after_stop:#?}");
    assert!(
        after_stop.iter().all(|e| e.business_date <= running.business_date),
        "a date after the running one was started: {after_stop:#?}"
    );
    let ended = after_stop.iter().find(|e| e.id == running.id).unwrap().clone();
    let settled: Vec<_> = after_stop
        .iter()
        .filter(|e| e.status == "SUCCESS")
        .map(|e| e.business_date)
        .collect();
    let prefix_end = if ended.status == "SUCCESS" {
        running.business_date
    } else {
        running.business_date.pred_opt().unwrap()
    };
    assert_eq!(
        settled,
        days(from, prefix_end),
        "the settled dates are a prefix of the range"
    );
    // Never half-written: the rows are exactly those of the settled dates.
    assert_matches_oracle(&pool, &loans, &settled).await;
    assert!(lock_expired(&pool).await, "the lock was released");

    // A later run completes the rest.
    let rest = Finesettle::new(database.url(), "replica-q")
        .env("FINESETTLE_SETTLE_BATCH_SIZE", "100")
        .run(&backfill(from, to), Duration::from_secs(120))
        .await;
    rest.assert_success();
    assert_settled_exactly_once(&pool, &loans, &dates).await;
    ended
}

#[tokio::test]
async fn sigterm_lets_the_running_date_finish_then_releases_the_lock_and_exits_0() {
    // Released once the process stopped taking fires: the date still has the whole grace.
    let ended = sigterm_in_the_middle_of_a_date("30s", "shutting down: no new fires").await;
    assert_eq!((ended.status.as_str(), ended.error), ("SUCCESS", None));
}

#[tokio::test]
async fn sigterm_past_the_grace_rolls_the_running_date_back_and_records_it_failed() {
    // Released once the grace ran out: the date notices at its next batch and rolls back.
    let ended = sigterm_in_the_middle_of_a_date(
        "0s",
        "settlement still running after the grace period; abandoning its date",
    )
    .await;
    assert_eq!(ended.status, "FAILED");
    assert_eq!(
        ended.error.as_deref(),
        Some("abandoned: the run was stopped before the date finished (lease lost or shutdown)")
    );
}

/// Issue 10 case 5: SIGTERM in the middle of a walk that a cron fire started. The process takes
/// no new date, gives the running one the grace, then abandons it (rolled back, FAILED),
/// releases the lock and exits 0: within the grace and the rest of the shutdown, not after the
/// walk's remaining dates.
#[tokio::test]
async fn sigterm_during_a_cron_fired_walk_honours_the_grace() {
    const GRACE_SECS: u64 = 2;
    // Six dates of four seconds: the walk would outlast the grace by far.
    let (database, pool) = migrated_db().await;
    let today = finesettle::store::clock::business_today(&pool, Shanghai).await.unwrap();
    let fire_at = whole_second_in(&pool, 8).await;
    let target = settle_target(fire_at, Shanghai);
    let from = target - Days::new(5);
    let loans = seed(&pool, &recent_loans(121, today)).await;
    slow_dates(&pool, Duration::from_secs(4)).await;
    let mut serve = Finesettle::new(database.url(), "replica-c")
        .env("FINESETTLE_SETTLE_CRON", once_at(fire_at))
        .env("FINESETTLE_SETTLE_START_DATE", from.to_string())
        .env("FINESETTLE_LOCK_AT_LEAST_FOR", "0s")
        .env("FINESETTLE_SHUTDOWN_GRACE", format!("{GRACE_SECS}s"))
        .spawn(&["serve"]);

    let running = poll_until(
        "the cron fire to start its first date",
        Duration::from_secs(60),
        async || {
            serve.assert_running();
            executions(&pool).await.into_iter().find(|e| e.status == "RUNNING")
        },
    )
    .await;
    assert_eq!((running.trigger.as_str(), running.business_date), ("cron", from));
    serve.signal(Signal::Term);
    // A generous bound: the grace, the date's statement in flight, the server's own shutdown.
    let stopped = serve.wait(Duration::from_secs(GRACE_SECS + 10)).await;
    stopped.assert_success();

    let after = executions(&pool).await;
    assert_eq!(after.len(), 1, "no date after the running one was started: {after:#?}");
    assert_eq!(after[0].id, running.id);
    assert_eq!(
        (after[0].status.as_str(), after[0].error.as_deref()),
        (
            "FAILED",
            Some("abandoned: the run was stopped before the date finished (lease lost or shutdown)")
        )
    );
    assert!(lock_expired(&pool).await, "the lock was released");
    // Rolled back: no fine, no ledger entry.
    assert_matches(
        &Model::after(from, &loans, &[]),
        &fines(&pool).await,
        &ledger(&pool).await,
    );
}

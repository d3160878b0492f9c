//! `finesettle settle` and `finesettle backfill` from a terminal: the same lock, fencing and
//! records as the scheduled fires.

use std::time::Duration;

use finesettle::lock::{JobLock, LockSpec};

use crate::common::checks::{assert_settled_exactly_once, attempts_as, executions, lock_expired, poll_until};
use crate::common::data::{days, ymd};
use crate::common::process::{Finesettle, Signal, backfill};
use crate::common::seed::{fixed_loans, migrated_db, seed};
use crate::common::slow::{fast_dates, slow_dates};

const WITHIN: Duration = Duration::from_secs(60);

/// Settles one date twice with the CLI, `customize` applied to both commands: the first prints
/// the date's outcome, the second says the date is already settled and exits 0.
async fn settle_twice(customize: impl Fn(Finesettle) -> Finesettle) {
    let (database, pool) = migrated_db().await;
    let loans = seed(&pool, &fixed_loans(71)).await;
    let date = ymd(2026, 3, 16);
    let settle = ["settle", "--date", "2026-03-16"];
    let operator = || customize(Finesettle::new(database.url(), "operator-console"));

    let first = operator().run(&settle, WITHIN).await;
    first.assert_success();
    let line = first
        .stdout
        .lines()
        .find(|l| l.starts_with("2026-03-16"))
        .unwrap_or_default();
    assert!(line.contains("SUCCESS") && line.contains("rows="), "{}", first.output());
    let recorded = executions(&pool).await;
    assert_eq!(recorded.len(), 1);
    assert_eq!(
        (
            recorded[0].business_date,
            recorded[0].trigger.as_str(),
            recorded[0].instance_id.as_str()
        ),
        (date, "manual", "operator-console")
    );

    let second = operator().run(&settle, WITHIN).await;
    second.assert_success();
    assert!(
        second
            .stdout
            .contains("every date from 2026-03-16 to 2026-03-16 is already settled"),
        "{}",
        second.output()
    );
    assert_eq!(
        executions(&pool).await,
        recorded,
        "the second run recorded no execution"
    );
    assert_settled_exactly_once(&pool, &loans, &[date]).await;
}

#[tokio::test]
async fn settle_prints_the_outcome_and_a_second_settle_of_the_date_says_already_settled() {
    // The lock is free as soon as the first run released it: the second one finds the date
    // settled.
    settle_twice(|command| command.env("FINESETTLE_LOCK_AT_LEAST_FOR", "0s")).await;
}

#[tokio::test]
async fn a_second_settle_within_lock_at_least_for_also_says_already_settled() {
    // The default lock_at_least_for (1 minute): the first run's lock is still taken when the
    // second one starts, although that run has ended and the date is settled.
    settle_twice(|command| command).await;
}

#[tokio::test]
async fn backfill_while_another_replica_holds_the_lock_fails_naming_the_holder() {
    let (database, pool) = migrated_db().await;
    let loans = seed(&pool, &fixed_loans(72)).await;
    let (from, to) = (ymd(2026, 3, 1), ymd(2026, 3, 5));
    let lock = JobLock::postgres(pool.clone());
    let spec = LockSpec {
        task_name: "settle-fines".into(),
        instance_id: "replica-elsewhere".to_owned(),
        at_most_for: Duration::from_secs(60),
        at_least_for: Duration::ZERO,
    };
    let lease = match lock.try_acquire(&spec).await.unwrap() {
        finesettle::lock::Acquired::Won(lease) => lease,
        held => panic!("the lock of a fresh database is free: {held:?}"),
    };

    let refused = Finesettle::new(database.url(), "operator-console")
        .run(&backfill(from, to), WITHIN)
        .await;
    refused.assert_failure();
    assert!(
        refused
            .stderr
            .contains("not started: the lock is held by replica-elsewhere until"),
        "{}",
        refused.output()
    );
    assert!(
        executions(&pool).await.is_empty(),
        "the refused backfill settled nothing"
    );
    let seen: Vec<_> = attempts_as(&pool, |a| (a.instance_id, a.outcome, a.holder)).await;
    assert_eq!(
        seen,
        [(
            "operator-console".into(),
            "HELD".into(),
            Some("replica-elsewhere".into())
        )]
    );

    // Once the other holder is done, the same command settles the range.
    assert!(lock.release(&lease, Duration::ZERO).await.unwrap());
    let done = Finesettle::new(database.url(), "operator-console")
        .run(&backfill(from, to), WITHIN)
        .await;
    done.assert_success();
    for date in days(from, to) {
        assert!(done.stdout.contains(&format!("{date} SUCCESS")), "{}", done.output());
    }
    assert_settled_exactly_once(&pool, &loans, &days(from, to)).await;
}

/// Issue 10 case 5: `signal` (Ctrl-C or SIGTERM) in the middle of `finesettle backfill`. The
/// running date gets the grace, then is abandoned; the lock is released, nothing stays RUNNING,
/// and the command exits non-zero. Run again, it settles the range.
async fn an_interrupted_backfill_releases_the_lock(signal: Signal) {
    const GRACE_SECS: u64 = 1;
    let (database, pool) = migrated_db().await;
    let loans = seed(&pool, &fixed_loans(73)).await;
    let (from, to) = (ymd(2026, 3, 27), ymd(2026, 3, 31));
    slow_dates(&pool, Duration::from_secs(3)).await;
    let operator = || {
        Finesettle::new(database.url(), "operator-console")
            .env("FINESETTLE_LOCK_AT_LEAST_FOR", "0s")
            .env("FINESETTLE_SHUTDOWN_GRACE", format!("{GRACE_SECS}s"))
    };

    let mut run = operator().spawn(&backfill(from, to));
    let running = poll_until("the backfill to start a date", WITHIN, async || {
        run.assert_running();
        executions(&pool).await.into_iter().find(|e| e.status == "RUNNING")
    })
    .await;
    run.signal(signal);
    let stopped = run.wait(Duration::from_secs(GRACE_SECS + 10)).await;
    stopped.assert_failure();
    assert!(stopped.stderr.contains("interrupted"), "{}", stopped.output());

    let after = executions(&pool).await;
    assert!(after.iter().all(|e| e.status != "RUNNING"), "{after:#?}");
    let ended = after.iter().find(|e| e.id == running.id).unwrap();
    assert_eq!(ended.status, "FAILED", "{ended:?}");
    assert!(
        ended.error.as_deref().is_some_and(|e| e.starts_with("abandoned: ")),
        "{ended:?}"
    );
    assert!(
        after.iter().all(|e| e.business_date <= running.business_date),
        "no date after the running one: {after:#?}"
    );
    assert!(lock_expired(&pool).await, "the lock was released");

    // The same command again finishes the range.
    fast_dates(&pool).await;
    operator().run(&backfill(from, to), WITHIN).await.assert_success();
    assert_settled_exactly_once(&pool, &loans, &days(from, to)).await;
}

#[tokio::test]
async fn ctrl_c_during_a_backfill_releases_the_lock_and_leaves_nothing_running() {
    an_interrupted_backfill_releases_the_lock(Signal::Int).await;
}

#[tokio::test]
async fn sigterm_during_a_backfill_releases_the_lock_and_leaves_nothing_running() {
    an_interrupted_backfill_releases_the_lock(Signal::Term).await;
}

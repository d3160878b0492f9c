//! Issue 10 case 3: a business date that takes longer than the lease. The holder's renewal must
//! not wait for the holder's own fenced transaction (so the date finishes), while a takeover still
//! waits for it and then fences the old holder.

use std::time::Duration;

use chrono::NaiveDate;
use finesettle::domain::{FencingToken, TaskName};
use finesettle::jobs::{Refused, Request};
use finesettle::lock::{Acquired, JobLock, LockSpec, PgLock};
use finesettle::settlement::{self, DateStatus, RunContext, Trigger};
use tokio_util::sync::CancellationToken;

use crate::common::checks::{assert_settled_exactly_once, attempts_as, executions, lock_expired, poll_until};
use crate::common::data::{days, random_loans, ymd};
use crate::common::seed::seed;
use crate::common::slow::{execution_duration, fast_dates, sleeping_dates, slow_dates};
use crate::common::{spawn_app_with, spawn_replica};
use crate::replicas::cron::slot_for;

const TASK: TaskName = TaskName::from_static("settle-fines");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_date_three_leases_long_settles_while_the_lease_is_renewed_and_other_replicas_find_it_held() {
    const LEASE: Duration = Duration::from_secs(2);
    // More than three leases, spent inside the date's fenced transaction.
    const DATE: Duration = Duration::from_secs(8);
    let target = ymd(2026, 3, 16);
    let settings = |id: &'static str| {
        move |s: &mut finesettle::config::Settings| {
            s.instance_id = id.to_owned();
            s.job.lock_at_most_for = LEASE;
            s.job.lock_at_least_for = Duration::ZERO;
            s.job.settle_start_date = Some(target);
            s.job.batch_size = 100;
        }
    };
    let a = spawn_app_with(settings("replica-a")).await;
    let b = spawn_replica(&a, settings("replica-b")).await;
    let loans = seed(&a.pool, &random_loans(101, 300)).await;
    slow_dates(&a.pool, DATE).await;
    let slot = slot_for(target);

    // Replica a fires through the real job runner: lock, lease keeper, walk, release.
    let run = tokio::spawn({
        let job = a.job.clone();
        async move { job.fire(Trigger::Cron, slot, Request::CatchUp { target }).await }
    });
    poll_until(
        "the date to be inside its transaction",
        Duration::from_secs(30),
        async || (sleeping_dates(&a.pool).await > 0).then_some(()),
    )
    .await;

    // Meanwhile replica b fires too, again and again: always held by a (its attempt waits for
    // the date's transaction at most its row wait, then reports the lock held).
    let mut held = 0;
    while held < 3 && sleeping_dates(&a.pool).await > 0 {
        match b.job.fire(Trigger::Cron, slot, Request::CatchUp { target }).await {
            Err(Refused::Held { holder, .. }) => assert_eq!(holder, "replica-a"),
            other => panic!("expected the lock to be held by replica-a, got {other:?}"),
        }
        held += 1;
    }
    assert!(held >= 2, "replica b tried only {held} time(s) while the date ran");

    let report = run.await.unwrap().expect("replica a runs");
    assert!(!report.lost_lease, "{report:?}");
    assert!(report.walk.completed(), "{report:?}");
    let outcome = &report.walk.outcomes[0];
    assert_eq!(
        (outcome.date, outcome.status),
        (target, DateStatus::Success),
        "{report:?}"
    );
    let execution = outcome.execution_id.unwrap();
    let took = execution_duration(&a.pool, execution).await;
    assert!(
        took >= 3 * LEASE,
        "the date took {took:?}, not at least three leases of {LEASE:?}"
    );

    // a won once and never lost its lease; b was held each time it tried.
    let timeline: Vec<(String, String)> = attempts_as(&a.pool, |t| (t.instance_id, t.outcome)).await;
    let mut expected = vec![("replica-a".to_owned(), "WON".to_owned())];
    expected.extend((0..held).map(|_| ("replica-b".to_owned(), "HELD".to_owned())));
    assert_eq!(timeline, expected);
    assert_settled_exactly_once(&a.pool, &loans, &[target]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_takeover_during_a_long_date_waits_for_it_and_then_fences_the_old_holder() {
    const LEASE: Duration = Duration::from_secs(2);
    const DATE: Duration = Duration::from_secs(7);
    let (from, to) = (ymd(2026, 3, 29), ymd(2026, 4, 1));
    let dates = days(from, to);
    let app = spawn_app_with(|s| s.job.settle_start_date = Some(from)).await;
    let pool = app.pool.clone();
    let loans = seed(&pool, &random_loans(102, 300)).await;
    slow_dates(&pool, DATE).await;

    let lock = JobLock::postgres(pool.clone());
    let spec = |instance: &str| LockSpec {
        task_name: TASK,
        instance_id: instance.to_owned(),
        at_most_for: LEASE,
        at_least_for: Duration::ZERO,
    };
    let Acquired::Won(lease_a) = lock.try_acquire(&spec("replica-a")).await.unwrap() else {
        panic!("the lock of a fresh database is free");
    };
    let context = |instance: &str, fencing_token: FencingToken| RunContext {
        task_name: TASK,
        fencing_token,
        instance_id: instance.to_owned(),
        trigger: Trigger::Manual,
        start_date: from,
        business_tz: chrono_tz::Asia::Shanghai,
        batch_size: 100,
        statement_limits: Default::default(),
    };

    // Holder a walks the dates; nothing renews its lease but the one renewal below.
    let walk_a = tokio::spawn({
        let (pool, ctx) = (pool.clone(), context("replica-a", lease_a.fencing_token));
        let dates = dates.clone();
        async move {
            let never = CancellationToken::new();
            settlement::settle_dates(&pool, &ctx, &dates, &never, &never, ()).await
        }
    });
    poll_until(
        "the first date to be inside its transaction",
        Duration::from_secs(30),
        async || (sleeping_dates(&pool).await > 0).then_some(()),
    )
    .await;

    // While that fenced transaction is open, the holder renews its lease at once: a renewal
    // does not wait for the holder's own date.
    let renewed = tokio::time::timeout(Duration::from_secs(1), lock.renew(&lease_a, LEASE))
        .await
        .expect("the renewal does not wait for the holder's fenced transaction")
        .unwrap()
        .expect("the lease is still a's");
    assert!(renewed.locked_until > lease_a.locked_until);

    // Then a stops renewing (as if paused), and its lease runs out in the middle of the date.
    poll_until("a's lease to expire", Duration::from_secs(10), async || {
        lock_expired(&pool).await.then_some(())
    })
    .await;
    assert!(sleeping_dates(&pool).await > 0, "the first date is still running");

    // A takeover now waits for the date's transaction...
    let patient = JobLock::Postgres(PgLock::new(pool.clone()).with_row_wait(Duration::from_secs(60)));
    let takeover = tokio::spawn({
        let spec = spec("replica-b");
        async move { patient.try_acquire(&spec).await }
    });
    poll_until(
        "the takeover to wait for the date",
        Duration::from_secs(10),
        async || {
            let waiting: bool = sqlx::query_scalar(
                "select exists (select 1 from pg_stat_activity \
             where datname = current_database() and wait_event_type = 'Lock')",
            )
            .fetch_one(&pool)
            .await
            .unwrap();
            waiting.then_some(())
        },
    )
    .await;
    assert!(
        !takeover.is_finished(),
        "the takeover must wait for the fenced transaction"
    );

    // ...which commits with a's token, still current inside it; then b holds the next token.
    let Acquired::Won(lease_b) = takeover.await.unwrap().unwrap() else {
        panic!("b takes the expired lock over once the date committed");
    };
    assert_eq!(lease_b.fencing_token, FencingToken(lease_a.fencing_token.0 + 1));

    // a's next write is refused: its walk stops at the second date, which it never started.
    let report_a = walk_a.await.unwrap();
    let statuses: Vec<(NaiveDate, DateStatus)> = report_a.outcomes.iter().map(|o| (o.date, o.status)).collect();
    assert_eq!(
        statuses,
        [(dates[0], DateStatus::Success), (dates[1], DateStatus::Fenced)],
        "{report_a:?}"
    );
    assert_eq!(report_a.not_run, dates[2..]);
    let first = report_a.outcomes[0].execution_id.unwrap();
    let took = execution_duration(&pool, first).await;
    assert!(took >= 3 * LEASE, "the first date took {took:?}");

    // b settles the rest under its own token (quickly now), the first date already settled.
    fast_dates(&pool).await;
    let ctx_b = context("replica-b", lease_b.fencing_token);
    let never = CancellationToken::new();
    let report_b = settlement::settle_dates(&pool, &ctx_b, &dates, &never, &never, ()).await;
    assert!(report_b.completed(), "{report_b:?}");
    assert_eq!(report_b.succeeded(), dates.len() - 1, "{report_b:?}");

    // a's second date may have started before b's takeover got the row: a woken takeover and
    // the holder's next `for key share` race for it, and a busy machine lets the holder win.
    // Its RUNNING record then stays with token 1 (the next holder to win through a fire closes
    // it as abandoned), and its date's transaction was fenced all the same: nothing of it
    // committed.
    let all = executions(&pool).await;
    let (succeeded, other): (Vec<_>, Vec<_>) = all.iter().partition(|e| e.status == "SUCCESS");
    assert!(
        other
            .iter()
            .all(|e| (e.business_date, e.fencing_token, e.status.as_str())
                == (dates[1], lease_a.fencing_token.0, "RUNNING")),
        "{all:#?}"
    );
    for e in succeeded {
        let by = if e.business_date == dates[0] {
            ("replica-a", lease_a.fencing_token.0)
        } else {
            ("replica-b", lease_b.fencing_token.0)
        };
        assert_eq!((e.instance_id.as_str(), e.fencing_token), by, "{e:?}");
    }
    assert_settled_exactly_once(&pool, &loans, &dates).await;
}

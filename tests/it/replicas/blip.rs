//! Issue 10 case 6: the database goes away in the middle of a date, taking the date's transaction
//! and the write that would record it FAILED. The record must not stay RUNNING until the next
//! acquisition (a day, with the nightly cron): this process closes it as soon as the database
//! answers again.

use std::time::Duration;

use finesettle::jobs::Request;
use finesettle::settlement::{DateStatus, Trigger};

use crate::common::checks::{attempts_as, executions, lock_row, poll_until};
use crate::common::data::{random_loans, ymd};
use crate::common::proxy::DbProxy;
use crate::common::seed::seed;
use crate::common::slow::slow_dates;
use crate::common::spawn_app_with;
use crate::replicas::cron::slot_for;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_left_running_by_a_database_blip_is_closed_when_the_database_answers_again() {
    let target = ymd(2026, 3, 16);
    // The replica reaches PostgreSQL through a proxy the test can cut; the test itself does not.
    let mut proxy = None;
    let app = spawn_app_with(|s| {
        let (through, url) = DbProxy::in_front_of(&s.database_url);
        s.database_url = url;
        proxy = Some(through);
        s.instance_id = "replica-a".to_owned();
        s.job.settle_start_date = Some(target);
        s.job.lock_at_least_for = Duration::ZERO;
    })
    .await;
    let proxy = proxy.unwrap();
    let direct = sqlx::postgres::PgPoolOptions::new()
        .max_connections(2)
        .connect(app.database.url())
        .await
        .unwrap();
    seed(&direct, &random_loans(131, 300)).await;
    slow_dates(&direct, Duration::from_secs(3)).await;

    let fire = tokio::spawn({
        let job = app.job.clone();
        async move {
            job.fire(Trigger::Cron, slot_for(target), Request::CatchUp { target })
                .await
        }
    });
    let running = poll_until("the date to start", Duration::from_secs(30), async || {
        executions(&direct).await.into_iter().find(|e| e.status == "RUNNING")
    })
    .await;

    // The blip: every connection of the replica dropped, new ones refused.
    proxy.cut();
    let report = tokio::time::timeout(Duration::from_secs(120), fire)
        .await
        .expect("the fire ends while the database is unreachable")
        .unwrap()
        .expect("the fire had won the lock");
    let outcome = &report.walk.outcomes[0];
    assert_eq!(
        (outcome.date, outcome.status),
        (target, DateStatus::Failed),
        "{report:?}"
    );
    // The FAILED write failed too: the record is still RUNNING, and nobody else will acquire the
    // lock to close it.
    let left = executions(&direct).await;
    assert_eq!(left.len(), 1);
    assert_eq!((left[0].id, left[0].status.as_str()), (running.id, "RUNNING"));
    let (holder, token, _) = lock_row(&direct).await.unwrap();

    // The database answers again: the replica closes its record, FAILED with the cause.
    proxy.restore();
    let closed = poll_until("the replica to close its record", Duration::from_secs(30), async || {
        executions(&direct)
            .await
            .into_iter()
            .find(|e| e.id == running.id && e.status != "RUNNING")
    })
    .await;
    assert_eq!(closed.status, "FAILED");
    assert_eq!(closed.error, outcome.error);
    // By this process, under its own token: the lock did not change hands.
    assert_eq!(lock_row(&direct).await.unwrap().0, holder);
    assert_eq!(lock_row(&direct).await.unwrap().1, token);
    let outcomes: Vec<String> = attempts_as(&direct, |a| a.outcome).await;
    assert_eq!(outcomes, ["WON"]);
}

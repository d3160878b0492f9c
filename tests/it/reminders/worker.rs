//! The background worker as a replica runs it: on the database clock, against the real Redis.
//! These tests wait for an outcome (with a generous limit) and never assert how long it took.

use std::time::Duration;

use chrono::TimeDelta;
use finesettle::reminders::{ReminderWorkerConfig, run_reminder_worker};
use tokio_util::sync::CancellationToken;

use crate::common::spawn_app;
use crate::reminders::support::harness;

#[tokio::test]
async fn the_worker_restores_and_delivers_a_due_reminder_redis_never_saw() {
    let h = harness().await;
    let today = h.app.today().await;
    // Due two days ago (so its overdue moment, 09:00 yesterday, has passed whatever the time of
    // day), inserted behind the API's back: only the reconciler can find it.
    let loan = h.insert_loan(today - TimeDelta::days(2)).await;
    assert!(h.queued().await.is_empty());

    let stop = CancellationToken::new();
    let worker = tokio::spawn(run_reminder_worker(
        h.pool().clone(),
        h.redis.pool(),
        ReminderWorkerConfig::from_settings(&h.app.settings),
        stop.clone(),
    ));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while h.notifications().await.is_empty() {
        assert!(tokio::time::Instant::now() < deadline, "no reminder delivered");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    stop.cancel();
    worker.await.expect("the worker stops cleanly");
    assert_eq!(h.notifications().await, [(loan, "OVERDUE".to_owned())]);
    assert!(h.queued().await.is_empty() && h.in_flight().await.is_empty());
}

#[tokio::test]
async fn the_worker_survives_an_unreachable_redis_and_stops_when_asked() {
    let app = spawn_app().await;
    let unreachable = finesettle::store::redis::pool("redis://127.0.0.1:1/0").unwrap();
    let mut config = ReminderWorkerConfig::from_settings(&app.settings);
    config.poll_every = Duration::from_millis(50);
    let stop = CancellationToken::new();
    let worker = tokio::spawn(run_reminder_worker(app.pool.clone(), unreachable, config, stop.clone()));
    // Several failing ticks go by without a panic.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!worker.is_finished());
    stop.cancel();
    worker.await.expect("the worker stops cleanly after failing ticks");
}

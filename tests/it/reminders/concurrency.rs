//! Three consumers (three replicas, each with its own Redis pool) polling the same queue at once.

use chrono::{DateTime, TimeDelta, Utc};
use finesettle::reminders::ReminderKind::{DueTomorrow, Overdue};
use finesettle::reminders::{ConsumeReport, ReminderQueue};

use crate::reminders::support::{Harness, consumer_config, drain, harness, minutes};

const LOANS: usize = 150;
/// Small batches, so that the consumers' steps interleave many times.
const BATCH: usize = 7;

#[tokio::test(flavor = "multi_thread", worker_threads = 3)]
async fn three_consumers_record_every_reminder_exactly_once() {
    let h = harness().await;
    let due_on = h.in_days(10).await;
    let created = h.at(DueTomorrow, due_on, TimeDelta::days(-5));
    for _ in 0..LOANS {
        let loan = h.insert_loan(due_on).await;
        assert_eq!(h.schedule(loan, due_on, created).await, 2);
    }

    for now in [h.at(DueTomorrow, due_on, minutes(1)), h.at(Overdue, due_on, minutes(1))] {
        let reports = three_consumers(&h, now).await;
        let taken: usize = reports.iter().map(|r| r.taken).sum();
        let recorded: u64 = reports.iter().map(|r| r.recorded).sum();
        // The Lua step is atomic: no item was taken twice, so none had to be skipped.
        assert_eq!((taken, recorded), (LOANS, LOANS as u64), "{reports:?}");
        assert!(reports.iter().all(|r| r.skipped == 0), "{reports:?}");
    }

    let counts: Vec<(String, i64)> =
        sqlx::query_as("select kind, count(distinct loan_id) from notification group by kind order by kind")
            .fetch_all(h.pool())
            .await
            .unwrap();
    assert_eq!(
        counts,
        [
            ("DUE_TOMORROW".to_owned(), LOANS as i64),
            ("OVERDUE".to_owned(), LOANS as i64)
        ]
    );
    let rows: i64 = sqlx::query_scalar("select count(*) from notification")
        .fetch_one(h.pool())
        .await
        .unwrap();
    assert_eq!(rows, 2 * LOANS as i64);
    assert!(h.queued().await.is_empty() && h.in_flight().await.is_empty());
}

/// Three consumers drain the queue at `now`, concurrently; each one's reports summed.
async fn three_consumers(h: &Harness, now: DateTime<Utc>) -> Vec<ConsumeReport> {
    let consumers = (0..3).map(|_| {
        let pool = h.pool().clone();
        let queue = ReminderQueue::new(h.redis.pool());
        let config = consumer_config(h.tz(), BATCH);
        tokio::spawn(async move { drain(&pool, &queue, &config, now).await })
    });
    let mut reports = Vec::new();
    for consumer in consumers.collect::<Vec<_>>() {
        reports.push(consumer.await.unwrap());
    }
    reports
}

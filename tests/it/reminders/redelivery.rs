//! A consumer killed between taking reminders and acknowledging them: the reaper hands its items
//! to the next consumer once their visibility deadline passes, and each is recorded once.

use finesettle::reminders::ReminderKind::DueTomorrow;
use finesettle::reminders::{consumer, reap_expired};

use crate::reminders::support::{VISIBILITY, harness, harness_with_loan, minutes, seconds};

#[tokio::test]
async fn a_consumer_killed_after_taking_leaves_its_items_for_redelivery() {
    let h = harness().await;
    let due_on = h.in_days(3).await;
    let mut loans = Vec::new();
    for _ in 0..5 {
        loans.push(h.lend(due_on).await);
    }
    let now = h.at(DueTomorrow, due_on, minutes(1));

    // The first consumer takes every due item and dies: no record, no acknowledgement.
    let taken = h.take(now).await;
    assert_eq!(taken.len(), 5);
    drop(taken);
    assert_eq!(h.in_flight().await.len(), 5);

    // Until the deadline the items are invisible: another consumer finds nothing, the reaper
    // leaves them alone.
    let before_deadline = now + seconds(VISIBILITY.as_secs() as i64 - 1);
    assert_eq!(reap_expired(&h.queue, before_deadline).await.unwrap(), 0);
    assert_eq!(h.drain(before_deadline).await.taken, 0);
    assert!(h.notifications().await.is_empty());

    // At the deadline they go back, and the next consumer records each once.
    let deadline = now + seconds(VISIBILITY.as_secs() as i64);
    assert_eq!(reap_expired(&h.queue, deadline).await.unwrap(), 5);
    assert!(h.in_flight().await.is_empty());
    let report = h.drain(deadline).await;
    assert_eq!((report.taken, report.recorded, report.skipped), (5, 5, 0));

    let expected: Vec<(i64, String)> = loans.iter().map(|&id| (id, "DUE_TOMORROW".to_owned())).collect();
    assert_eq!(h.notifications().await, expected);
    assert!(h.in_flight().await.is_empty());
    assert_eq!(kinds_left(&h).await, ["OVERDUE"; 5]);
    // Nothing is left to redeliver.
    assert_eq!(reap_expired(&h.queue, deadline + minutes(60)).await.unwrap(), 0);
}

#[tokio::test]
async fn a_consumer_killed_after_recording_but_before_acknowledging_records_nothing_twice() {
    let h = harness().await;
    let due_on = h.in_days(3).await;
    for _ in 0..4 {
        h.lend(due_on).await;
    }
    let now = h.at(DueTomorrow, due_on, minutes(1));

    // Records, then dies before the acknowledgement.
    let taken = h.take(now).await;
    assert_eq!(consumer::record(h.pool(), &taken, now, h.tz()).await.unwrap(), 4);
    drop(taken);

    let deadline = now + seconds(VISIBILITY.as_secs() as i64);
    assert_eq!(reap_expired(&h.queue, deadline).await.unwrap(), 4);
    let report = h.drain(deadline).await;
    assert_eq!(
        (report.taken, report.recorded, report.skipped),
        (4, 0, 4),
        "redelivered, recorded once"
    );

    let sent_at: Vec<chrono::DateTime<chrono::Utc>> = sqlx::query_scalar("select sent_at from notification")
        .fetch_all(h.pool())
        .await
        .unwrap();
    assert_eq!(sent_at, [now; 4], "one row each, from the first recording");
    assert!(h.in_flight().await.is_empty());
    assert_eq!(kinds_left(&h).await, ["OVERDUE"; 4]);
}

#[tokio::test]
async fn a_slow_consumer_acknowledging_after_the_reaper_moved_its_items_loses_nothing() {
    let (h, due_on, loan) = harness_with_loan(3).await;
    let now = h.at(DueTomorrow, due_on, minutes(1));

    // A consumer stalls past its deadline; its item is reaped and taken by another.
    let slow = h.take(now).await;
    let later = now + seconds(VISIBILITY.as_secs() as i64);
    assert_eq!(reap_expired(&h.queue, later).await.unwrap(), 1);
    let fast = h.take(later).await;
    assert_eq!(fast, slow.iter().map(|t| consumer_item(t, later)).collect::<Vec<_>>());

    // The slow one wakes, records and acknowledges (removing the fast one's hold), then the
    // fast one does the same: one notification, nothing left anywhere.
    assert_eq!(consumer::record(h.pool(), &slow, now, h.tz()).await.unwrap(), 1);
    consumer::acknowledge(&h.queue, &slow).await.unwrap();
    assert_eq!(consumer::record(h.pool(), &fast, later, h.tz()).await.unwrap(), 0);
    consumer::acknowledge(&h.queue, &fast).await.unwrap();
    assert_eq!(h.notifications().await, [(loan, "DUE_TOMORROW".to_owned())]);
    assert!(h.in_flight().await.is_empty());
    assert_eq!(kinds_left(&h).await, ["OVERDUE"]);
}

/// The kinds still queued: the loans' OVERDUE reminders, not due yet in these tests.
async fn kinds_left(h: &crate::reminders::support::Harness) -> Vec<String> {
    h.queued()
        .await
        .into_iter()
        .map(|(member, _)| member.split_once(':').unwrap().1.to_owned())
        .collect()
}

/// The same item as taken again at `now` after a reap (requeued due at the reap's instant).
fn consumer_item(
    taken: &finesettle::reminders::queue::Taken,
    now: chrono::DateTime<chrono::Utc>,
) -> finesettle::reminders::queue::Taken {
    finesettle::reminders::queue::Taken {
        member: taken.member.clone(),
        due_ms: now.timestamp_millis(),
    }
}

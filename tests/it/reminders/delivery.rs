//! Scheduling on loan creation, delivery at the moment, the skip rules, returns, queue stats.

use chrono::TimeDelta;
use finesettle::reminders::consumer;
use finesettle::reminders::{ReminderKind::*, queue_stats};

use crate::reminders::support::{harness, harness_with_loan, member, minutes};

#[tokio::test]
async fn a_new_loan_queues_both_reminders_and_each_is_recorded_at_its_moment() {
    let (h, due_on, loan) = harness_with_loan(10).await;

    let due_tomorrow = h.at(DueTomorrow, due_on, TimeDelta::zero());
    let overdue = h.at(Overdue, due_on, TimeDelta::zero());
    assert_eq!(
        h.queued().await,
        [
            (member(loan, DueTomorrow), due_tomorrow.timestamp_millis()),
            (member(loan, Overdue), overdue.timestamp_millis()),
        ]
    );

    // A minute early: nothing is due.
    assert_eq!(h.drain(due_tomorrow - minutes(1)).await.taken, 0);
    // At the moment: "due tomorrow" only.
    let report = h.drain(due_tomorrow).await;
    assert_eq!((report.taken, report.recorded), (1, 1));
    assert_eq!(h.notifications().await, [(loan, "DUE_TOMORROW".to_owned())]);
    let sent_at: chrono::DateTime<chrono::Utc> =
        sqlx::query_scalar("select sent_at from notification where loan_id = $1")
            .bind(loan)
            .fetch_one(h.pool())
            .await
            .unwrap();
    assert_eq!(sent_at, due_tomorrow, "sent_at is the consumer's now");

    let report = h.drain(overdue + minutes(1)).await;
    assert_eq!((report.taken, report.recorded), (1, 1));
    assert_eq!(
        h.notifications().await,
        [(loan, "DUE_TOMORROW".to_owned()), (loan, "OVERDUE".to_owned())]
    );
    assert!(h.queued().await.is_empty() && h.in_flight().await.is_empty());
}

#[tokio::test]
async fn an_imported_overdue_loan_is_reminded_at_once_without_due_tomorrow() {
    let h = harness().await;
    let today = h.app.today().await;
    let loan = h
        .lend_from(today - TimeDelta::days(20), today - TimeDelta::days(10))
        .await;

    let queued = h.queued().await;
    assert_eq!(queued.len(), 1, "{queued:?}");
    assert_eq!(queued[0].0, member(loan, Overdue));
    // Due at once: at the moment it was scheduled, by the database clock.
    let now = finesettle::store::clock::now(h.pool()).await.unwrap();
    assert!(queued[0].1 <= now.timestamp_millis());

    let report = h.drain(now).await;
    assert_eq!((report.taken, report.recorded), (1, 1));
    assert_eq!(h.notifications().await, [(loan, "OVERDUE".to_owned())]);
}

#[tokio::test]
async fn a_due_tomorrow_reminder_that_waited_until_the_due_date_is_dropped() {
    let (h, due_on, loan) = harness_with_loan(10).await;
    // Workers were down all the day before: at 09:00 on the due date it is too late.
    let late = h.at(DueTomorrow, due_on, TimeDelta::days(1));
    let report = h.drain(late).await;
    assert_eq!((report.taken, report.recorded, report.skipped), (1, 0, 1));
    assert!(h.notifications().await.is_empty());
    // Acknowledged, and not restored either: only the overdue reminder is left.
    assert_eq!(
        h.queued().await.iter().map(|(m, _)| m.clone()).collect::<Vec<_>>(),
        [member(loan, Overdue)]
    );
    assert_eq!(h.reconcile(late).await, 0);
}

#[tokio::test]
async fn a_returned_loans_reminders_are_never_sent() {
    let (h, due_on, returned) = harness_with_loan(10).await;
    let kept = h.lend(due_on).await;
    h.app.return_loan(returned).await;

    // The return removed both reminders; the other loan keeps its own.
    let queued: Vec<String> = h.queued().await.into_iter().map(|(m, _)| m).collect();
    assert_eq!(queued, [member(kept, DueTomorrow), member(kept, Overdue)]);

    // Neither delivery nor the reconciler brings them back.
    assert_eq!(h.reconcile(h.at(DueTomorrow, due_on, minutes(1))).await, 0);
    h.drain(h.at(DueTomorrow, due_on, minutes(1))).await;
    h.drain(h.at(Overdue, due_on, minutes(1))).await;
    assert_eq!(
        h.notifications().await,
        [(kept, "DUE_TOMORROW".to_owned()), (kept, "OVERDUE".to_owned())]
    );
}

#[tokio::test]
async fn a_loan_returned_while_a_consumer_holds_its_reminder_is_not_reminded() {
    let (h, due_on, loan) = harness_with_loan(10).await;
    let now = h.at(DueTomorrow, due_on, minutes(1));
    let taken = h.take_one(now).await;

    h.app.return_loan(loan).await;
    assert!(h.in_flight().await.is_empty(), "the return cancels held reminders too");
    // The consumer carries on with what it took: Postgres says the loan is back.
    assert_eq!(consumer::record(h.pool(), &taken, now, h.tz()).await.unwrap(), 0);
    consumer::acknowledge(&h.queue, &taken).await.unwrap();
    assert!(h.notifications().await.is_empty());

    // Same when the cancel never reached Redis (it was down during the return).
    let other = h.lend(due_on).await;
    let taken = h.take(now).await;
    sqlx::query("update loan set returned_at = now(), returned_on = borrowed_on where id = $1")
        .bind(other)
        .execute(h.pool())
        .await
        .unwrap();
    assert_eq!(consumer::record(h.pool(), &taken, now, h.tz()).await.unwrap(), 0);
    assert_eq!(h.drain(h.at(Overdue, due_on, minutes(1))).await.recorded, 0);
    assert!(h.notifications().await.is_empty());
}

#[tokio::test]
async fn queue_stats_show_depth_in_flight_and_the_oldest_due_item() {
    let h = harness().await;
    let stats = queue_stats(&h.redis.pool()).await.unwrap();
    assert_eq!((stats.depth, stats.in_flight, stats.oldest_due_at), (0, 0, None));

    let soon = h.in_days(5).await;
    let later = h.in_days(9).await;
    h.lend(later).await;
    h.lend(soon).await;
    let stats = queue_stats(&h.redis.pool()).await.unwrap();
    assert_eq!((stats.depth, stats.in_flight), (4, 0));
    assert_eq!(stats.oldest_due_at, Some(h.at(DueTomorrow, soon, TimeDelta::zero())));

    h.take(h.at(DueTomorrow, soon, minutes(1))).await;
    let stats = queue_stats(&h.redis.pool()).await.unwrap();
    assert_eq!((stats.depth, stats.in_flight), (3, 1));
    assert_eq!(stats.oldest_due_at, Some(h.at(Overdue, soon, TimeDelta::zero())));
}

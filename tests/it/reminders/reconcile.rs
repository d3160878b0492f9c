//! Redis losing its data, or being down while loans are made: the reconciler rebuilds the
//! missing reminders from Postgres, and none is sent twice.

use chrono::TimeDelta;
use finesettle::reminders::ReminderKind::{DueTomorrow, Overdue};
use finesettle::reminders::{ConsumeReport, ReminderQueue, reconcile};

use crate::common::redis::TestRedis;
use crate::common::spawn_app_with;
use crate::reminders::support::{consumer_config, drain, harness, harness_with_loan, member, minutes};

#[tokio::test]
async fn after_a_flush_the_reconciler_restores_every_reminder_and_none_is_sent_twice() {
    let h = harness().await;
    let soon = h.in_days(10).await;
    let later = h.in_days(20).await;
    let a = h.lend(soon).await;
    let b = h.lend(soon).await;
    let c = h.lend(later).await;
    let mut delivered = ConsumeReport::default();
    let mut add = |report: ConsumeReport| {
        delivered.taken += report.taken;
        delivered.recorded += report.recorded;
        delivered.skipped += report.skipped;
    };

    // A's and B's "due tomorrow" go out; then Redis loses everything, and loans keep coming.
    let t1 = h.at(DueTomorrow, soon, minutes(1));
    add(h.drain(t1).await);
    h.redis.flush();
    let d = h.lend(soon).await;
    assert_eq!(h.queued().await.len(), 2, "D's reminders reached the empty Redis");

    // Restored: what is neither recorded (A, B due tomorrow) nor queued (D).
    let report = reconcile(h.pool(), &h.queue, t1, h.tz()).await.unwrap();
    assert_eq!((report.loans, report.restored), (4, 4));
    let mut queued: Vec<String> = h.queued().await.into_iter().map(|(m, _)| m).collect();
    queued.sort();
    let mut expected = vec![
        member(a, Overdue),
        member(b, Overdue),
        member(c, DueTomorrow),
        member(c, Overdue),
        member(d, DueTomorrow),
        member(d, Overdue),
    ];
    expected.sort();
    assert_eq!(queued, expected);
    // Restored at their own moments, not "now".
    let scores = h.queued().await;
    let score_of = |m: String| scores.iter().find(|(q, _)| *q == m).unwrap().1;
    assert_eq!(
        score_of(member(c, Overdue)),
        h.at(Overdue, later, TimeDelta::zero()).timestamp_millis()
    );
    // A second walk finds nothing missing.
    assert_eq!(h.reconcile(t1).await, 0);

    add(h.drain(t1).await);
    add(h.drain(h.at(Overdue, soon, minutes(1))).await);
    add(h.drain(h.at(DueTomorrow, later, minutes(1))).await);
    add(h.drain(h.at(Overdue, later, minutes(1))).await);

    assert_eq!((delivered.taken, delivered.recorded, delivered.skipped), (8, 8, 0));
    let mut sent = Vec::new();
    for loan in [a, b, c, d] {
        sent.push((loan, "DUE_TOMORROW".to_owned()));
        sent.push((loan, "OVERDUE".to_owned()));
    }
    assert_eq!(h.notifications().await, sent);
    assert!(h.queued().await.is_empty() && h.in_flight().await.is_empty());
}

#[tokio::test]
async fn the_reconciler_leaves_reminders_a_consumer_holds_alone() {
    let (h, due_on, loan) = harness_with_loan(10).await;
    let now = h.at(DueTomorrow, due_on, minutes(1));
    h.take_one(now).await;

    // Not recorded yet, but held: queuing it again would deliver it twice.
    assert_eq!(h.reconcile(now).await, 0);
    assert_eq!(
        h.queued().await.into_iter().map(|(m, _)| m).collect::<Vec<_>>(),
        [member(loan, Overdue)]
    );
}

#[tokio::test]
async fn loans_made_while_redis_is_down_get_their_reminders_once_it_is_back() {
    // Nothing listens on port 1: every Redis call fails at once.
    let app = spawn_app_with(|settings| settings.redis_url = Some("redis://127.0.0.1:1/0".to_owned())).await;
    let member_id = app.create_member("Ada", "ada@example.org").await["id"]
        .as_i64()
        .unwrap();
    let due_on = app.today().await + TimeDelta::days(10);
    let mut loans = Vec::new();
    for _ in 0..3 {
        let book = app.create_book("Dune").await["id"].as_i64().unwrap();
        // Made all the same: the loan request does not depend on Redis.
        loans.push(app.create_loan(member_id, book, due_on).await["id"].as_i64().unwrap());
    }
    let returned = loans.pop().unwrap();
    app.return_loan(returned).await;

    // Redis is back (here: a Redis the app never reached) and the reconciler runs.
    let redis = TestRedis::create().await;
    let queue = ReminderQueue::new(redis.pool());
    let tz = app.settings.business_tz;
    let now = finesettle::reminders::timing::moment(DueTomorrow, due_on, tz).unwrap() - TimeDelta::days(1);
    let report = reconcile(&app.pool, &queue, now, tz).await.unwrap();
    assert_eq!(
        (report.loans, report.restored),
        (2, 4),
        "both open loans, nothing for the returned one"
    );

    let config = consumer_config(tz, 100);
    for kind in [DueTomorrow, Overdue] {
        let at = finesettle::reminders::timing::moment(kind, due_on, tz).unwrap() + minutes(1);
        let report = drain(&app.pool, &queue, &config, at).await;
        assert_eq!((report.taken, report.recorded), (2, 2));
    }
    let sent: i64 = sqlx::query_scalar("select count(*) from notification")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(sent, 4);
}

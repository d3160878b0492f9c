//! Several replicas evaluating and delivering at once: each alert raised once, each
//! notification POSTed once.

use std::collections::HashSet;

use finesettle::alerts::{AlertKind, EvaluationReport, deliver_due, evaluate_at};

use crate::alerts::support::{
    Receiver, count, execution, instant, registered_at, replica_pool, rules, slow_retry_policy,
};
use crate::common::spawn_app;

fn raised(reports: &[&EvaluationReport]) -> Vec<(AlertKind, String)> {
    let mut all: Vec<_> = reports
        .iter()
        .flat_map(|r| r.raised.iter().map(|a| (a.kind, a.business_date.to_string())))
        .collect();
    all.sort();
    all
}

#[tokio::test]
async fn three_replicas_raise_and_resolve_each_alert_once_and_the_receiver_gets_one_post_per_event() {
    let app = spawn_app().await;
    let (one, two, three) = (
        app.pool.clone(),
        replica_pool(app.database.url()).await,
        replica_pool(app.database.url()).await,
    );
    let rules = rules(true);
    registered_at(&app.pool, "2026-06-09T12:00:00Z").await;
    // A failed date before the deployment (FAILED only) and a date nothing ran for (MISSED).
    execution(&app.pool, "2026-06-05", "FAILED", "3 days").await;
    let at = instant("2026-06-10T04:00:00Z");

    let (a, b, c) = tokio::join!(
        evaluate_at(&one, &rules, at),
        evaluate_at(&two, &rules, at),
        evaluate_at(&three, &rules, at)
    );
    let (a, b, c) = (a.unwrap(), b.unwrap(), c.unwrap());
    assert_eq!(
        raised(&[&a, &b, &c]),
        [
            (AlertKind::Failed, "2026-06-05".to_owned()),
            (AlertKind::Missed, "2026-06-09".to_owned())
        ]
    );
    assert_eq!(count(&app.pool, "select count(*) from alert").await, 2);
    assert_eq!(count(&app.pool, "select count(*) from alert_delivery").await, 2);

    let receiver = Receiver::start(0).await;
    let webhook = receiver.webhook();
    let policy = slow_retry_policy();
    let (a, b, c) = tokio::join!(
        deliver_due(&one, &webhook, &policy),
        deliver_due(&two, &webhook, &policy),
        deliver_due(&three, &webhook, &policy)
    );
    let delivered = a.unwrap().delivered + b.unwrap().delivered + c.unwrap().delivered;
    assert_eq!(delivered, 2);
    let posts = receiver.received();
    assert_eq!(posts.len(), 2, "{posts:?}");
    assert!(posts.iter().all(|p| p.body["event"] == "raised"), "{posts:?}");

    // The fix for both dates; three replicas resolve, each alert once.
    execution(&app.pool, "2026-06-05", "SUCCESS", "1 minute").await;
    execution(&app.pool, "2026-06-09", "SUCCESS", "1 minute").await;
    let (a, b, c) = tokio::join!(
        evaluate_at(&one, &rules, at),
        evaluate_at(&two, &rules, at),
        evaluate_at(&three, &rules, at)
    );
    let (a, b, c) = (a.unwrap(), b.unwrap(), c.unwrap());
    assert_eq!(a.resolved.len() + b.resolved.len() + c.resolved.len(), 2);
    assert!(raised(&[&a, &b, &c]).is_empty());

    let (a, b, c) = tokio::join!(
        deliver_due(&one, &webhook, &policy),
        deliver_due(&two, &webhook, &policy),
        deliver_due(&three, &webhook, &policy)
    );
    assert_eq!(a.unwrap().delivered + b.unwrap().delivered + c.unwrap().delivered, 2);
    let posts = receiver.received();
    assert_eq!(posts.len(), 4, "{posts:?}");
    let resolved: Vec<_> = posts.iter().filter(|p| p.body["event"] == "resolved").collect();
    assert_eq!(resolved.len(), 2, "{posts:?}");
    assert!(resolved.iter().all(|p| p.body["alert"]["state"] == "RESOLVED"));
    let keys: HashSet<_> = posts.iter().map(|p| p.idempotency_key.clone()).collect();
    assert_eq!(keys.len(), 4, "one idempotency key per notification: {posts:?}");

    // Nothing left to send, whoever asks.
    assert_eq!(deliver_due(&two, &webhook, &policy).await.unwrap().delivered, 0);
    assert_eq!(receiver.received().len(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 3)]
async fn replicas_on_separate_threads_race_for_the_same_alerts() {
    let app = spawn_app().await;
    let rules = rules(true);
    for day in 1..=5 {
        execution(&app.pool, &format!("2026-05-0{day}"), "FAILED", "1 hour").await;
        execution(&app.pool, &format!("2026-05-1{day}"), "RUNNING", "2 hours").await;
    }
    let mut replicas = Vec::new();
    for _ in 0..3 {
        let pool = replica_pool(app.database.url()).await;
        let rules = rules.clone();
        replicas.push(tokio::spawn(async move {
            finesettle::alerts::evaluate_once(&pool, &rules)
                .await
                .unwrap()
                .raised
                .len()
        }));
    }
    let mut total = 0;
    for replica in replicas {
        total += replica.await.unwrap();
    }
    assert_eq!(total, 10);
    assert_eq!(count(&app.pool, "select count(*) from alert").await, 10);
    assert_eq!(count(&app.pool, "select count(*) from alert_delivery").await, 10);
}

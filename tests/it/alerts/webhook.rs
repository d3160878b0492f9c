//! Webhook delivery from the outbox: retries, ordering, and the idempotency key.

use finesettle::alerts::{DeliveryReport, deliver_due, evaluate_once};
use sqlx::PgPool;

use crate::alerts::support::{Receiver, count, execution, rules, slow_retry_policy};
use crate::common::spawn_app;

async fn make_due(pool: &PgPool) {
    sqlx::query("update alert_delivery set next_attempt_at = now() where delivered_at is null")
        .execute(pool)
        .await
        .unwrap();
}

/// `(attempts, last_error, delivered)` of the only delivery row.
async fn delivery_row(pool: &PgPool) -> (i32, Option<String>, bool) {
    sqlx::query_as("select attempts, last_error, delivered_at is not null from alert_delivery")
        .fetch_one(pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_receiver_that_fails_twice_then_succeeds_gets_exactly_one_accepted_post() {
    let app = spawn_app().await;
    execution(&app.pool, "2026-06-01", "FAILED", "20 minutes").await;
    let alert = evaluate_once(&app.pool, &rules(true)).await.unwrap().raised.remove(0);
    let receiver = Receiver::start(2).await;
    let webhook = receiver.webhook();
    let policy = slow_retry_policy();
    let failed = DeliveryReport {
        delivered: 0,
        failed: 1,
    };
    let idle = DeliveryReport::default();

    assert_eq!(deliver_due(&app.pool, &webhook, &policy).await.unwrap(), failed);
    let (attempts, error, delivered) = delivery_row(&app.pool).await;
    assert_eq!((attempts, delivered), (1, false));
    let error = error.unwrap();
    assert!(error.contains("HTTP 500"), "{error}");
    assert!(!error.contains("s3cret") && !error.contains("t0ken"), "{error}");
    // The retry waits for its backoff: nothing is due yet.
    let backing_off: bool =
        sqlx::query_scalar("select next_attempt_at > now() + interval '5 minutes' from alert_delivery")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert!(backing_off);
    assert_eq!(deliver_due(&app.pool, &webhook, &policy).await.unwrap(), idle);
    assert_eq!(receiver.received().len(), 1);

    make_due(&app.pool).await;
    assert_eq!(deliver_due(&app.pool, &webhook, &policy).await.unwrap(), failed);
    make_due(&app.pool).await;
    let report = deliver_due(&app.pool, &webhook, &policy).await.unwrap();
    assert_eq!(
        report,
        DeliveryReport {
            delivered: 1,
            failed: 0
        }
    );
    assert_eq!(delivery_row(&app.pool).await, (3, None, true));

    // Delivered rows are never sent again.
    sqlx::query("update alert_delivery set next_attempt_at = now()")
        .execute(&app.pool)
        .await
        .unwrap();
    assert_eq!(deliver_due(&app.pool, &webhook, &policy).await.unwrap(), idle);

    let posts = receiver.received();
    assert_eq!(posts.iter().map(|p| p.status).collect::<Vec<_>>(), [500, 500, 204]);
    assert_eq!(receiver.accepted().len(), 1);
    let delivery_id: uuid::Uuid = sqlx::query_scalar("select id from alert_delivery")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert!(
        posts.iter().all(|p| p.idempotency_key == delivery_id.to_string()),
        "{posts:?}"
    );
    let body = &receiver.accepted()[0].body;
    assert_eq!(body["event"], "raised");
    assert_eq!(body["alert"]["id"], alert.id);
    assert_eq!(body["alert"]["kind"], "FAILED");
    assert_eq!(body["alert"]["task_name"], "settle-fines");
    assert_eq!(body["alert"]["business_date"], "2026-06-01");
    assert_eq!(body["alert"]["state"], "ACTIVE");
    assert!(body["alert"]["raised_at"].as_str().unwrap().ends_with('Z'));
    assert!(body["alert"]["resolved_at"].is_null());
    assert!(body["alert"]["detail"].is_string());
}

#[tokio::test]
async fn a_resolve_is_never_announced_before_its_raise() {
    let app = spawn_app().await;
    let rules = rules(true);
    execution(&app.pool, "2026-06-01", "FAILED", "20 minutes").await;
    evaluate_once(&app.pool, &rules).await.unwrap();
    execution(&app.pool, "2026-06-01", "SUCCESS", "1 minute").await;
    assert_eq!(evaluate_once(&app.pool, &rules).await.unwrap().resolved.len(), 1);
    assert_eq!(count(&app.pool, "select count(*) from alert_delivery").await, 2);

    let receiver = Receiver::start(1).await;
    let webhook = receiver.webhook();
    let policy = slow_retry_policy();
    // The raise fails; the resolve, although due, waits for it.
    let report = deliver_due(&app.pool, &webhook, &policy).await.unwrap();
    assert_eq!((report.delivered, report.failed), (0, 1));
    assert_eq!(receiver.received().len(), 1);
    make_due(&app.pool).await;
    assert_eq!(deliver_due(&app.pool, &webhook, &policy).await.unwrap().delivered, 1);
    assert_eq!(deliver_due(&app.pool, &webhook, &policy).await.unwrap().delivered, 1);
    let events: Vec<_> = receiver.accepted().iter().map(|p| p.body["event"].clone()).collect();
    assert_eq!(events, ["raised", "resolved"]);
}

#[tokio::test]
async fn a_claim_blocks_other_workers_and_a_lost_one_is_resent_with_the_same_key() {
    let app = spawn_app().await;
    execution(&app.pool, "2026-06-01", "FAILED", "20 minutes").await;
    evaluate_once(&app.pool, &rules(true)).await.unwrap();
    let receiver = Receiver::start(0).await;
    let webhook = receiver.webhook();
    let policy = slow_retry_policy();

    // A worker claims the row and dies before POSTing: nobody else may take it during the lease.
    let claimed = finesettle::store::alerts::claim_due_deliveries(&app.pool, 10, 300.0)
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(
        deliver_due(&app.pool, &webhook, &policy).await.unwrap(),
        DeliveryReport::default()
    );
    assert!(receiver.received().is_empty());

    // The lease runs out: the next worker sends it.
    make_due(&app.pool).await;
    assert_eq!(deliver_due(&app.pool, &webhook, &policy).await.unwrap().delivered, 1);

    // A crash between the receiver's 2xx and recording it looks like this: sent again, same key.
    sqlx::query("update alert_delivery set delivered_at = null, next_attempt_at = now()")
        .execute(&app.pool)
        .await
        .unwrap();
    assert_eq!(deliver_due(&app.pool, &webhook, &policy).await.unwrap().delivered, 1);
    let posts = receiver.accepted();
    assert_eq!(posts.len(), 2);
    assert_eq!(posts[0].idempotency_key, claimed[0].id.to_string());
    assert_eq!(posts[0].idempotency_key, posts[1].idempotency_key);
    assert_eq!(posts[0].body, posts[1].body);
}

//! DATABASE_FAILOVER: two replicas behind a proxy, the primary killed after a date only it had,
//! its standby promoted. The replicas notice the new timeline (a reconnect prompts the check),
//! one alert is raised across both, naming what the promotion lost, and it resolves once the lost
//! dates are settled again.

use std::time::Duration;

use chrono::NaiveDate;
use finesettle::domain::alert::AlertKind;
use finesettle::failover::{Noticed, check, resolve_resettled};
use serde_json::json;
use sqlx::PgPool;

use super::cluster::Node;
use super::replica::Replica;
use crate::common::checks::{eventually, poll_until};
use crate::common::proxy::DbProxy;

/// Runs `date` (and any earlier unsettled date) on `replica` and waits until the replica saw its
/// SUCCESS acknowledged.
async fn settle(replica: &Replica, date: NaiveDate) {
    let (status, body) = replica
        .post("/api/v1/jobs/settle-fines/runs", json!({ "business_date": date }))
        .await;
    assert_eq!(status, 202, "{body}");
    // The replica remembers a SUCCESS once its fire is over (after the commit and the release).
    eventually(
        "the replica to remember the date's SUCCESS",
        Duration::from_secs(20),
        async || replica.watch.acknowledged().success == Some(date),
    )
    .await;
}

/// The failover check, repeated while the replica's pool still hands out connections the proxy
/// cut (each failed attempt drops one).
async fn check_through_reconnects(replica: &Replica) -> Option<Noticed> {
    poll_until(
        "a failover check that reaches the database",
        Duration::from_secs(20),
        async || check(&replica.pool, &replica.watch, &replica.rules()).await.ok(),
    )
    .await
}

async fn failover_alerts(pool: &PgPool) -> Vec<(NaiveDate, String, String)> {
    sqlx::query_as("select business_date, state, detail from alert where kind = 'DATABASE_FAILOVER' order by id")
        .fetch_all(pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_promotion_is_raised_once_across_two_replicas_naming_what_it_lost() {
    let mut primary = Node::primary().await;
    // An ordinary role owning its database, as in production: no superuser, no pg_monitor.
    primary.execute("postgres", "create role finesettle_owner login").await;
    primary
        .execute("postgres", "create database finesettle owner finesettle_owner")
        .await;
    let owner_url = format!("postgres://finesettle_owner@127.0.0.1:{}/finesettle", primary.port);
    let (proxy, url) = DbProxy::in_front_of(&owner_url);
    let a = Replica::spawn(&url, "replica-a").await;
    let b = Replica::spawn(&url, "replica-b").await;
    let today = finesettle::store::clock::business_today(&a.pool, a.settings.business_tz)
        .await
        .unwrap();
    let kept = today - chrono::Days::new(3);
    let lost = today - chrono::Days::new(2);

    settle(&a, kept).await; // token 1
    let mut standby = Node::standby_of(&primary).await;
    settle(&a, lost).await; // token 2: on the old primary only

    primary.kill().await;
    standby.start().await;
    standby.promote().await;
    proxy.switch_to(standby.addr());

    // The pool's first new connection finds the new timeline and wakes the check.
    eventually("a replica to reconnect", Duration::from_secs(20), async || {
        sqlx::query("select 1").execute(&a.pool).await.is_ok()
    })
    .await;
    tokio::time::timeout(Duration::from_secs(10), a.watch.changed())
        .await
        .expect("a new connection tells the watch the identity changed");

    let noticed_a = check_through_reconnects(&a).await.expect("a failover");
    let noticed_b = check_through_reconnects(&b).await.expect("a failover");
    let raised = noticed_a.raised.expect("the first replica to notice raises it");
    assert!(noticed_b.raised.is_none(), "raised once across replicas");
    assert_eq!(raised.kind, AlertKind::DatabaseFailover);
    assert_eq!(
        noticed_b.failover.business_date, raised.business_date,
        "both replicas key it alike"
    );
    assert_eq!(raised.business_date, today);
    let expected = [
        "timeline 1 -> 2".to_owned(),
        format!("fencing token 2 and SUCCESS {lost}"),
        format!("holds token 1 and its latest SUCCESS is {kept}"),
        "went back from 2 to 1".to_owned(),
        format!("SUCCESS of {lost} through {lost} may be lost"),
        "not final: its dates will be settled again".to_owned(),
    ];
    for part in &expected {
        assert!(raised.detail.contains(part), "{part:?} missing from {}", raised.detail);
    }
    // Checked again: nothing new to say.
    assert!(check(&a.pool, &a.watch, &a.rules()).await.unwrap().is_none());
    assert_eq!(failover_alerts(&a.pool).await.len(), 1);

    // The lost date is settled again (through yesterday): the alert resolves.
    assert!(resolve_resettled(&a.pool, &a.rules()).await.unwrap().is_empty());
    settle(&b, today - chrono::Days::new(1)).await;
    let resolved = resolve_resettled(&b.pool, &b.rules()).await.unwrap();
    assert_eq!(resolved.len(), 1);
    let alerts = failover_alerts(&a.pool).await;
    assert_eq!((alerts.len(), alerts[0].1.as_str()), (1, "RESOLVED"));
    // The token b's run got is above every token of timeline 1.
    let token: i64 = sqlx::query_scalar("select fencing_token from task_lock")
        .fetch_one(&b.pool)
        .await
        .unwrap();
    assert_eq!(token, (1 << 32) + 1);
    drop(standby);
}

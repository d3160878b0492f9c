//! `/readyz` names the primary's replication, as an ordinary role sees it, and stays 200 for it.

use std::time::Duration;

use super::cluster::Node;
use super::replica::Replica;
use crate::common::checks::eventually;

async fn replication(replica: &Replica) -> String {
    let (status, body) = replica.get("/readyz").await;
    assert_eq!(status, 200, "replication never makes a replica unready: {body}");
    body["replication"].as_str().unwrap_or_default().to_owned()
}

async fn until_replication(replica: &Replica, expected: &str) {
    eventually(
        &format!("readyz to say {expected}"),
        Duration::from_secs(30),
        async || replication(replica).await == expected,
    )
    .await;
}

#[tokio::test]
async fn readyz_says_whether_the_primary_has_a_synchronous_standby() {
    let primary = Node::primary().await;
    primary.execute("postgres", "create role finesettle_owner login").await;
    primary
        .execute("postgres", "create database finesettle owner finesettle_owner")
        .await;
    let mut standby = Node::standby_of(&primary).await;
    standby.start().await;
    let url = format!("postgres://finesettle_owner@127.0.0.1:{}/finesettle", primary.port);
    let replica = Replica::spawn(&url, "replica-a").await;

    until_replication(&replica, "asynchronous").await;

    primary
        .execute("postgres", "alter system set synchronous_standby_names = '*'")
        .await;
    primary.execute("postgres", "select pg_reload_conf()").await;
    until_replication(&replica, "synchronous").await;

    primary
        .execute("postgres", "alter system reset synchronous_standby_names")
        .await;
    primary.execute("postgres", "select pg_reload_conf()").await;
    standby.kill().await;
    until_replication(&replica, "none").await;
}

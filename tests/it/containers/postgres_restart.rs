//! A restart of the PostgreSQL container in the middle of the walk: every connection of every
//! replica is cut, the server is gone for seconds, then back.

use std::time::Duration;

use crate::common::checks::{attempts, executions, poll_until};
use crate::containers::stack::{REPLICAS, Stack};

#[tokio::test]
async fn after_a_postgres_restart_mid_walk_the_replicas_reconnect_and_settle_each_date_once() {
    let mut stack = Stack::start("pg-restart", 63).await;
    poll_until(
        "a date RUNNING after one settled",
        Duration::from_secs(90),
        async || {
            let all = executions(&stack.pool).await;
            let settled = all.iter().any(|e| e.status == "SUCCESS");
            let running = all.iter().any(|e| e.status == "RUNNING");
            (settled && running).then_some(())
        },
    )
    .await;

    // SIGINT (the image's stop signal): PostgreSQL's fast shutdown, which ends every session and
    // rolls back every open transaction, then a start on the same data.
    stack
        .postgres
        .stop_with_timeout(Some(20))
        .await
        .expect("stop PostgreSQL");
    stack.postgres.start().await.expect("start PostgreSQL again");
    stack.reconnect().await;
    let restarted = finesettle::store::clock::now(&stack.pool).await.unwrap();

    stack.assert_caught_up().await;
    // No replica gave up: each is running and fired again on the restarted server.
    poll_until(
        "every replica to record a fire after the restart",
        Duration::from_secs(60),
        async || {
            let after = attempts(&stack.pool).await;
            REPLICAS
                .iter()
                .all(|id| after.iter().any(|a| a.instance_id == *id && a.fired_at > restarted))
                .then_some(())
        },
    )
    .await;
    for replica in &stack.replicas {
        assert!(
            replica.container.is_running().await.unwrap(),
            "{} exited\n{}",
            replica.id,
            stack.logs(replica).await
        );
    }
    stack.stop_all().await;
}

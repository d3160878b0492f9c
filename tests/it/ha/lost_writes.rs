//! Asynchronous replication (Patroni's default): the standbys stop receiving WAL, the primary
//! goes on acknowledging a settled date and payments, and is then SIGKILLed. The standby
//! promoted lacks that tail. The service cannot bring it back, but it must notice: one
//! `DATABASE_FAILOVER` alert, no fencing token issued a second time, and the walk settles the
//! lost dates again, each once.

use crate::common::ha::Replication;
use crate::ha::walk::Walk;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_asynchronous_promotion_that_loses_writes_is_alerted_and_repeats_no_token() {
    let mut walk = Walk::start_on(Replication::Asynchronous, 333).await;
    let payments = walk.start_payments().await;
    walk.wait_mid_walk(&payments).await;
    walk.cluster.hold_wal().await;
    // Acknowledged by the primary alone: a date settled, and its token.
    let settled = walk.successes().await;
    walk.wait_another_success(settled).await;
    let before = walk.highest_token().await;
    let fault = walk.cluster.kill_primary().await;
    walk.cluster.release_wal();
    walk.finish_after_lost_writes(fault, payments, before).await;
}

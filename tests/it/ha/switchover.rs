//! Patroni's planned switchover in the middle of the walk: the primary hands over to the
//! synchronous standby and restarts as a standby.

use crate::ha::walk::Walk;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_planned_switchover_mid_walk_costs_only_503s_and_loses_no_date_nor_payment() {
    let mut walk = Walk::start(331).await;
    let payments = walk.start_payments().await;
    walk.wait_mid_walk(&payments).await;
    let fault = walk.cluster.switchover().await;
    walk.finish("switchover", fault, payments).await;
}

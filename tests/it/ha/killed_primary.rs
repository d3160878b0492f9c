//! The primary's postmaster SIGKILLed in the middle of the walk: Patroni fails over to the
//! synchronous standby, and the old primary rejoins as a standby (pg_rewind).

use crate::ha::walk::Walk;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_primary_killed_mid_walk_costs_only_503s_and_loses_no_date_nor_payment() {
    let mut walk = Walk::start(332).await;
    let payments = walk.start_payments().await;
    walk.wait_mid_walk(&payments).await;
    let fault = walk.cluster.kill_primary().await;
    walk.finish("killed primary", fault, payments).await;
}

//! `docker pause` (the cgroup freezer: every thread of the holder stops at once, as in a long GC
//! pause or a VM stall) past the holder's lease, then `docker unpause`.

use std::time::Duration;

use crate::common::checks::{attempts, executions, poll_until, written_with};
use crate::containers::stack::Stack;

#[tokio::test]
async fn a_holder_frozen_past_its_lease_writes_nothing_when_it_thaws() {
    let stack = Stack::start("pause", 62).await;
    let (holder, frozen) = stack.freeze_holder_mid_date().await;
    let token = frozen.fencing_token;

    // Frozen, it renews nothing: the others take over once the lease ends and the database has
    // ended its idle transaction, and settle every date while it sleeps.
    stack.assert_caught_up().await;
    let all = executions(&stack.pool).await;
    let closed = all.iter().find(|e| e.id == frozen.id).unwrap();
    assert_eq!(closed.status, "FAILED", "{closed:?}");
    let before_thawing = written_with(&stack.pool, token).await;
    assert!(!before_thawing.is_empty(), "the holder settled a date before it froze");

    // It thaws in the middle of its date, still believing it holds the lock: the fence stops it,
    // and it reports the lost lease.
    holder.container.unpause().await.expect("docker unpause");
    poll_until(
        "the thawed holder to record its lost lease",
        Duration::from_secs(60),
        async || {
            attempts(&stack.pool)
                .await
                .iter()
                .any(|a| a.instance_id == holder.id && a.outcome == "LOST_LEASE" && a.fencing_token == Some(token))
                .then_some(())
        },
    )
    .await;
    assert_eq!(
        written_with(&stack.pool, token).await,
        before_thawing,
        "the thawed holder wrote after it lost the lock\n{}",
        stack.logs(holder).await
    );

    stack.assert_caught_up().await;
    // Thawed, it is an ordinary replica again: it stops cleanly with the others.
    stack.stop_all().await;
}

//! `docker pause` (the cgroup freezer: every thread of the holder stops at once, as in a long GC
//! pause or a VM stall) past the holder's lease, then `docker unpause`.

use crate::common::checks::Attempt;
use crate::containers::stack::Stack;

#[tokio::test]
async fn a_holder_frozen_past_its_lease_writes_nothing_when_it_thaws() {
    let stack = Stack::start("pause", 62).await;
    let (holder, frozen) = stack.freeze_holder_mid_date().await;

    // Frozen, it renews nothing: the others take over once the lease ends and the database has
    // ended its idle transaction, and settle every date while it sleeps.
    let before_thawing = stack.assert_taken_over_from(&frozen).await;
    assert!(
        !before_thawing.rows.is_empty(),
        "the holder settled a date before it froze"
    );

    // It thaws in the middle of its date, still believing it holds the lock: the fence stops it,
    // and it reports the lost lease.
    holder.container.unpause().await.expect("docker unpause");
    let token = frozen.fencing_token;
    let lost_lease = |a: &Attempt| a.outcome == "LOST_LEASE" && a.fencing_token == Some(token);
    stack
        .assert_back_without_writing(holder, &before_thawing, lost_lease)
        .await;

    stack.assert_caught_up().await;
    // Thawed, it is an ordinary replica again: it stops cleanly with the others.
    stack.stop_all().await;
}

//! The holder cut off the network in the middle of a date (`docker network disconnect`): its
//! TCP connections are not reset, they hang, as in a real partition. Then it is reconnected.

use crate::common::checks::Attempt;
use crate::containers::stack::Stack;

#[tokio::test]
async fn a_holder_cut_off_mid_date_cannot_commit_and_no_date_is_lost_or_settled_twice() {
    let stack = Stack::start("partition", 64).await;
    let (holder, cut_off) = stack.freeze_holder_mid_date().await;
    // Cut off while frozen, so that it is in the middle of its date, then let it run on: every
    // statement it sends from now on goes nowhere.
    stack.disconnect(holder);
    holder.container.unpause().await.expect("docker unpause");

    // The database ends the holder's idle transaction; its lease ends unrenewed; the others take
    // over and settle every date, the cut-off one included.
    let before_reconnecting = stack.assert_taken_over_from(&cut_off).await;

    // Back on the network: its stale transaction cannot commit, and it writes nothing with its
    // old token; it is an ordinary replica again and records its next fires.
    let reconnected = finesettle::store::clock::now(&stack.pool).await.unwrap();
    stack.connect(holder);
    let fired_since = |a: &Attempt| a.fired_at > reconnected;
    stack
        .assert_back_without_writing(holder, &before_reconnecting, fired_since)
        .await;
    stack.assert_caught_up().await;
    stack.stop_all().await;
}

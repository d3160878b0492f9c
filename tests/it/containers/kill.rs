//! `docker kill` of the lock holder in the middle of a date.

use crate::common::checks::executions;
use crate::common::containers::docker;
use crate::containers::stack::Stack;

#[tokio::test]
async fn a_holder_killed_mid_date_is_taken_over_and_its_date_settled_once() {
    let stack = Stack::start("kill", 61).await;
    let (holder, interrupted) = stack.freeze_holder_mid_date().await;
    // SIGKILL to the frozen container: the process dies without a word, its connections close.
    docker(&["kill", holder.container.id()]);

    // The others take the lock over when the lease ends, and settle every date.
    stack.assert_caught_up().await;
    assert_eq!(
        holder.container.exit_code().await.unwrap(),
        Some(137),
        "killed by SIGKILL"
    );

    // The killed date stays FAILED, closed by the next holder, and was settled once by another.
    let all = executions(&stack.pool).await;
    let closed = all.iter().find(|e| e.id == interrupted.id).unwrap();
    assert_eq!(closed.status, "FAILED", "{closed:?}");
    assert!(
        closed
            .error
            .as_deref()
            .is_some_and(|e| e.starts_with("abandoned: the lock passed to fencing token")),
        "{closed:?}"
    );
    let redone: Vec<_> = all
        .iter()
        .filter(|e| e.business_date == interrupted.business_date && e.status == "SUCCESS")
        .collect();
    assert_eq!(redone.len(), 1, "{all:#?}");
    assert_ne!(redone[0].instance_id, holder.id);
    assert!(redone[0].fencing_token > interrupted.fencing_token, "{redone:?}");

    stack.stop_all().await;
}

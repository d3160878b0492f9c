//! Issue test 3: the holder is killed (SIGKILL) in the middle of a backfill.

use std::time::Duration;

use crate::common::checks::{assert_settled_exactly_once, attempts_as, executions, lock_expired, poll_until};
use crate::common::data::days;
use crate::common::process::{Finesettle, Signal, backfill};
use crate::common::seed::seeded_busy_range;

#[tokio::test]
async fn a_holder_killed_mid_backfill_is_taken_over_once_its_lease_expires() {
    let (database, pool, loans, (from, to), dates) = seeded_busy_range(31).await;
    let replica = |id: &str| Finesettle::new(database.url(), id).with_a_short_lease();

    let (a, interrupted) = replica("replica-a").backfill_stopped_mid_date(&pool, from, to).await;
    a.signal(Signal::Kill);
    let killed = a.wait(Duration::from_secs(10)).await;
    assert_eq!(killed.status.code(), None, "killed by a signal\n{}", killed.output());
    let token_a = interrupted.fencing_token;

    // Its lease outlives it: another replica is refused, and told who holds the lock.
    assert!(
        !lock_expired(&pool).await,
        "the lease of the killed holder is still running"
    );
    let refused = replica("replica-b")
        .run(&backfill(from, to), Duration::from_secs(30))
        .await;
    refused.assert_failure();
    assert!(
        refused.stderr.contains("the lock is held by replica-a"),
        "{}",
        refused.output()
    );
    assert!(
        executions(&pool).await.iter().all(|e| e.instance_id == "replica-a"),
        "the refused replica recorded no execution"
    );

    // Once the lease ran out (no renewal from a dead process), the next attempt takes over.
    poll_until(
        "the killed holder's lease to expire",
        Duration::from_secs(15),
        async || lock_expired(&pool).await.then_some(()),
    )
    .await;
    let took_over = replica("replica-b")
        .run(&backfill(from, to), Duration::from_secs(120))
        .await;
    took_over.assert_success();
    let remaining = days(interrupted.business_date, to);
    for date in &remaining {
        assert!(
            took_over.stdout.contains(&format!("{date} SUCCESS")),
            "{date}\n{}",
            took_over.output()
        );
    }

    // The killed holder's date stays FAILED, closed by the new holder; nothing is left RUNNING.
    let token_b = token_a + 1;
    let all = executions(&pool).await;
    let closed = all.iter().find(|e| e.id == interrupted.id).unwrap();
    assert_eq!(closed.status, "FAILED");
    assert_eq!(
        closed.error.as_deref(),
        Some(format!("abandoned: the lock passed to fencing token {token_b}").as_str())
    );
    assert!(all.iter().all(|e| e.status != "RUNNING"), "{all:#?}");
    for e in all.iter().filter(|e| e.status == "SUCCESS") {
        let expected = if e.business_date < interrupted.business_date {
            ("replica-a", token_a)
        } else {
            ("replica-b", token_b)
        };
        assert_eq!((e.instance_id.as_str(), e.fencing_token), expected, "{e:?}");
    }

    // The timeline: a won, b found it held by a, then won with the next token.
    let timeline: Vec<(String, String, Option<i64>, Option<String>)> =
        attempts_as(&pool, |t| (t.instance_id, t.outcome, t.fencing_token, t.holder)).await;
    assert_eq!(
        timeline,
        [
            ("replica-a".into(), "WON".into(), Some(token_a), None),
            ("replica-b".into(), "HELD".into(), None, Some("replica-a".into())),
            ("replica-b".into(), "WON".into(), Some(token_b), None),
        ]
    );
    assert_settled_exactly_once(&pool, &loans, &dates).await;
}

//! Issue test 4: the holder is paused (SIGSTOP) past its lease, another replica takes over and
//! completes, then the first one wakes up (SIGCONT) still believing it holds the lock.

use std::time::Duration;

use sqlx::PgPool;

use crate::common::checks::{
    assert_settled_exactly_once, attempts_as, executions, lock_expired, poll_until, written_with,
};
use crate::common::process::{Finesettle, Signal, backfill};
use crate::common::seed::seeded_busy_range;

/// Sessions of this database inside a transaction that is waiting for its client.
async fn idle_in_transaction(pool: &PgPool) -> i64 {
    sqlx::query_scalar(
        "select count(*) from pg_stat_activity \
         where datname = current_database() and state like 'idle in transaction%'",
    )
    .fetch_one(pool)
    .await
    .unwrap()
}

#[tokio::test]
async fn a_holder_paused_past_its_lease_writes_nothing_when_it_wakes() {
    let (database, pool, loans, (from, to), dates) = seeded_busy_range(32).await;
    let replica = |id: &str| Finesettle::new(database.url(), id).with_a_short_lease();

    let (a, paused) = replica("replica-a").backfill_stopped_mid_date(&pool, from, to).await;
    let token_a = paused.fencing_token;

    // Paused, A renews nothing: its lease runs out. If it was stopped inside a transaction, that
    // transaction holds the fence's key-share lock on the lock row, which keeps any takeover waiting;
    // the database ends such a session after the fence's idle limit, rolling it back.
    poll_until(
        "the paused holder's lease to expire",
        Duration::from_secs(15),
        async || lock_expired(&pool).await.then_some(()),
    )
    .await;
    poll_until(
        "the database to end the paused holder's transaction",
        Duration::from_secs(30),
        async || (idle_in_transaction(&pool).await == 0).then_some(()),
    )
    .await;

    let took_over = replica("replica-b")
        .run(&backfill(from, to), Duration::from_secs(120))
        .await;
    took_over.assert_success();
    let token_b = token_a + 1;
    let all = executions(&pool).await;
    let closed = all.iter().find(|e| e.id == paused.id).unwrap();
    assert_eq!(
        (closed.status.as_str(), closed.error.as_deref()),
        (
            "FAILED",
            Some(format!("abandoned: the lock passed to fencing token {token_b}").as_str())
        )
    );
    assert!(all.iter().all(|e| e.status != "RUNNING"), "{all:#?}");
    let before_waking = written_with(&pool, token_a).await;
    assert!(!before_waking.is_empty(), "A settled dates before it was paused");

    // A wakes up in the middle of its date, its lease long gone.
    a.signal(Signal::Cont);
    let woke = a.wait(Duration::from_secs(60)).await;
    woke.assert_failure();
    assert!(
        woke.stderr.contains("the lease was lost; another replica took over"),
        "A reports the lost lease\n{}",
        woke.output()
    );
    // Its date did not settle; the process printed how it ended.
    let line = woke
        .stdout
        .lines()
        .find(|l| l.starts_with(&paused.business_date.to_string()))
        .unwrap_or_else(|| panic!("no line for {}\n{}", paused.business_date, woke.output()));
    assert!(!line.contains("SUCCESS"), "{line}");

    // Not one row written with A's token since the takeover; B's result stands.
    assert_eq!(
        written_with(&pool, token_a).await,
        before_waking,
        "A wrote after it lost the lock"
    );
    let timeline: Vec<(String, String, Option<i64>)> =
        attempts_as(&pool, |t| (t.instance_id, t.outcome, t.fencing_token)).await;
    assert_eq!(
        timeline,
        [
            ("replica-a".into(), "WON".into(), Some(token_a)),
            ("replica-b".into(), "WON".into(), Some(token_b)),
            ("replica-a".into(), "LOST_LEASE".into(), Some(token_a)),
        ]
    );
    let executions = executions(&pool).await;
    assert_eq!(executions, all, "A recorded nothing after waking");
    assert_settled_exactly_once(&pool, &loans, &dates).await;
}

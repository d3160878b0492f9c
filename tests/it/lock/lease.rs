//! Lease renewal while the job runs, and the `lost` signal when renewal can no longer succeed, on
//! each backend.

use std::time::Duration;

use finesettle::lock::{LeaseKeeper, LockSpec};
use tokio_util::sync::CancellationToken;

use crate::lock::backend::{Backend, Fixture};
use crate::lock::{TASK, acquire, spec};

on_each_backend!(
    the_keeper_pushes_locked_until_forward_while_the_job_runs,
    the_keeper_signals_lost_when_the_lease_is_taken_over,
    the_keeper_signals_lost_when_renewals_fail_until_the_lease_runs_out,
    stopping_at_once_keeps_the_lease_as_granted,
    a_keeper_started_late_still_gives_up_when_the_lease_ends,
);

/// A lease short enough for renewals to happen within a test.
const SHORT: Duration = Duration::from_secs(3);

fn short_spec(instance: &str) -> LockSpec {
    LockSpec {
        at_most_for: SHORT,
        ..spec(TASK, instance)
    }
}

/// Waits for `lost` to be cancelled; the bound only keeps a broken keeper from hanging the test.
async fn wait_lost(lost: CancellationToken) {
    tokio::time::timeout(Duration::from_secs(60), lost.cancelled())
        .await
        .expect("the keeper signals the lost lease");
}

async fn the_keeper_pushes_locked_until_forward_while_the_job_runs(backend: Backend) {
    let fx = Fixture::new(backend).await;
    let lock = fx.lock.clone();
    let lease = acquire(&lock, &short_spec("replica-a")).await;
    let keeper = LeaseKeeper::start(lock.clone(), lease.clone(), SHORT);
    let lost = keeper.lost();

    while keeper.renewals() < 2 {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let renewed = keeper.stop().await;
    assert!(!lost.is_cancelled());
    assert!(renewed.locked_until > lease.locked_until);
    assert_eq!(
        (renewed.owner_token, renewed.fencing_token),
        (lease.owner_token, lease.fencing_token)
    );
    // a renewal cut short by stop() may still have landed, never gone backwards
    assert!(fx.stored(&TASK).await.4 >= renewed.locked_until);
    assert!(lock.release(&renewed, Duration::ZERO).await.unwrap());
}

async fn the_keeper_signals_lost_when_the_lease_is_taken_over(backend: Backend) {
    let fx = Fixture::new(backend).await;
    let lock = fx.lock.clone();
    let lease = acquire(&lock, &short_spec("replica-a")).await;
    let keeper = LeaseKeeper::start(lock.clone(), lease.clone(), SHORT);

    fx.expire(&TASK).await;
    let successor = acquire(&lock, &short_spec("replica-b")).await;
    wait_lost(keeper.lost()).await;
    let renewals = keeper.renewals();
    let last = keeper.stop().await;

    assert_eq!(last.owner_token, lease.owner_token);
    let (locked_by, owner_token, ..) = fx.stored(&TASK).await;
    assert_eq!((locked_by.as_str(), owner_token), ("replica-b", successor.owner_token));
    assert!(!lock.release(&last, Duration::ZERO).await.unwrap());
    assert!(renewals <= 1, "no renewal succeeds after the takeover");
}

async fn the_keeper_signals_lost_when_renewals_fail_until_the_lease_runs_out(backend: Backend) {
    let fx = Fixture::new(backend).await;
    let (lock, store) = fx.lock_on_own_store(2).await;
    let lease = acquire(&lock, &short_spec("replica-a")).await;
    let keeper = LeaseKeeper::start(lock, lease, SHORT);
    // the store becomes unreachable for this replica
    store.close().await;

    wait_lost(keeper.lost()).await;
    assert_eq!(keeper.renewals(), 0);
    keeper.stop().await;
}

async fn stopping_at_once_keeps_the_lease_as_granted(backend: Backend) {
    let fx = Fixture::new(backend).await;
    let lock = fx.lock.clone();
    let lease = acquire(&lock, &spec(TASK, "replica-a")).await;
    let keeper = LeaseKeeper::start(lock.clone(), lease.clone(), Duration::from_secs(600));
    let lost = keeper.lost();
    assert_eq!(keeper.stop().await, lease);
    assert!(!lost.is_cancelled());
    assert_eq!(fx.stored(&TASK).await.4, lease.locked_until);
}

async fn a_keeper_started_late_still_gives_up_when_the_lease_ends(backend: Backend) {
    let fx = Fixture::new(backend).await;
    let (lock, store) = fx.lock_on_own_store(2).await;
    let asked = tokio::time::Instant::now();
    let lease = acquire(&lock, &short_spec("replica-a")).await;
    // the job plans its work before it starts the keeper, and the store goes away meanwhile
    let late = Duration::from_millis(1_500);
    tokio::time::sleep(late).await;
    store.close().await;
    let keeper = LeaseKeeper::start(lock, lease, SHORT);

    wait_lost(keeper.lost()).await;
    // counted from when the acquisition was sent, not from when the keeper started
    let lost_after = asked.elapsed();
    assert!(
        lost_after < SHORT + late / 2,
        "gave up {lost_after:?} after asking for {SHORT:?}"
    );
    keeper.stop().await;
}

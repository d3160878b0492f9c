//! ShedLock's lock provider cases: acquire, hold, expire, extend, release, on each backend.

use std::collections::HashSet;
use std::time::Duration;

use finesettle::domain::{FencingToken, OwnerToken};
use finesettle::lock::{JobLock, Lease, LockError, LockSpec};

use crate::common::spawn_app;
use crate::lock::backend::{Backend, Fixture};
use crate::lock::{MINUTE, TASK, acquire, db_now, held_by, spec, stored};

on_each_backend!(
    a_second_acquisition_fails_while_held_even_by_the_same_instance,
    an_expired_lock_is_taken_over_with_a_new_owner_and_token,
    the_fencing_token_grows_and_the_owner_token_is_fresh_on_every_acquisition,
    extend_works_only_while_held,
    release_by_a_non_owner_changes_nothing,
    release_keeps_the_lock_for_at_least_for_so_a_late_replica_does_not_rerun,
    release_with_nothing_left_of_at_least_for_frees_the_lock_at_once,
    release_never_lengthens_the_lock,
    list_shows_every_task_and_whether_it_is_held,
    an_unreachable_store_is_reported_as_unavailable_not_a_panic,
    an_absurd_lease_is_refused_by_the_store_not_a_panic,
);

#[tokio::test]
async fn the_first_acquisition_inserts_the_row_on_the_database_clock() {
    let app = spawn_app().await;
    let lock = JobLock::postgres(app.pool.clone());
    let before = db_now(&app.pool).await;
    let lease = acquire(&lock, &spec(TASK, "replica-a")).await;

    assert_eq!(lease.task_name, TASK);
    assert_eq!(lease.locked_by, "replica-a");
    assert_eq!(lease.fencing_token, FencingToken(1));
    assert!(!lease.owner_token.0.is_nil());
    assert!(lease.locked_at >= before);
    assert_eq!(lease.locked_until - lease.locked_at, chrono::Duration::minutes(10));
    let (locked_by, owner_token, fencing_token, locked_at, locked_until) = stored(&app.pool, &TASK).await;
    assert_eq!(
        (locked_by, owner_token, fencing_token, locked_at, locked_until),
        (
            lease.locked_by.clone(),
            lease.owner_token,
            FencingToken(1),
            lease.locked_at,
            lease.locked_until
        )
    );
}

async fn a_second_acquisition_fails_while_held_even_by_the_same_instance(backend: Backend) {
    let fx = Fixture::new(backend).await;
    let lock = &fx.lock;
    let lease = acquire(lock, &spec(TASK, "replica-a")).await;
    let row = fx.stored(&TASK).await;

    for instance in ["replica-b", "replica-a"] {
        let (holder, locked_until) = held_by(lock.try_acquire(&spec(TASK, instance)).await.unwrap());
        assert_eq!(holder, "replica-a");
        assert_eq!(locked_until, lease.locked_until);
    }
    assert_eq!(fx.stored(&TASK).await, row, "a refused acquisition changes nothing");
}

async fn an_expired_lock_is_taken_over_with_a_new_owner_and_token(backend: Backend) {
    let fx = Fixture::new(backend).await;
    let lock = &fx.lock;
    let first = acquire(lock, &spec(TASK, "replica-a")).await;
    fx.expire(&TASK).await;

    let second = acquire(lock, &spec(TASK, "replica-b")).await;
    assert_eq!(second.locked_by, "replica-b");
    assert_eq!(second.fencing_token, FencingToken(first.fencing_token.0 + 1));
    assert_ne!(second.owner_token, first.owner_token);
    assert!(second.locked_at > first.locked_at);
    held_by(lock.try_acquire(&spec(TASK, "replica-a")).await.unwrap());
}

async fn the_fencing_token_grows_and_the_owner_token_is_fresh_on_every_acquisition(backend: Backend) {
    let fx = Fixture::new(backend).await;
    let lock = &fx.lock;
    let mut owners = HashSet::new();
    for expected in 1..=6 {
        // the same instance every time: ownership must not come from the instance id
        let lease = acquire(lock, &spec(TASK, "replica-a")).await;
        assert_eq!(lease.fencing_token, FencingToken(expected));
        assert!(owners.insert(lease.owner_token), "owner token reused");
        assert!(lock.release(&lease, Duration::ZERO).await.unwrap());
    }
}

async fn extend_works_only_while_held(backend: Backend) {
    let fx = Fixture::new(backend).await;
    let lock = &fx.lock;
    let mut short = spec(TASK, "replica-a");
    short.at_most_for = MINUTE;
    let lease = acquire(lock, &short).await;

    assert!(lock.renew(&lease, 10 * MINUTE).await.unwrap().is_some());
    let (.., locked_until) = fx.stored(&TASK).await;
    assert!(locked_until >= lease.locked_at + chrono::Duration::minutes(10));
    let renewed = lock.renew(&lease, 10 * MINUTE).await.unwrap().expect("still held");
    assert_eq!(fx.stored(&TASK).await.4, renewed.locked_until);
    assert_eq!(
        (renewed.owner_token, renewed.fencing_token),
        (lease.owner_token, lease.fencing_token)
    );

    // expired, not yet taken over: lost all the same, and the lock stays expired
    fx.expire(&TASK).await;
    let expired = fx.try_stored(&TASK).await;
    assert!(lock.renew(&lease, 10 * MINUTE).await.unwrap().is_none());
    assert_eq!(fx.try_stored(&TASK).await, expired);

    // taken over: the old lease cannot extend, the new one can
    let successor = acquire(lock, &spec(TASK, "replica-b")).await;
    let row = fx.stored(&TASK).await;
    assert!(lock.renew(&lease, 10 * MINUTE).await.unwrap().is_none());
    assert_eq!(fx.stored(&TASK).await, row);
    assert!(lock.renew(&successor, 10 * MINUTE).await.unwrap().is_some());
}

async fn release_by_a_non_owner_changes_nothing(backend: Backend) {
    let fx = Fixture::new(backend).await;
    let lock = &fx.lock;
    let lease = acquire(lock, &spec(TASK, "replica-a")).await;
    let row = fx.stored(&TASK).await;

    // same instance name and token number, another acquisition's owner token
    let impostor = Lease {
        owner_token: OwnerToken::random(),
        ..lease.clone()
    };
    assert!(!lock.release(&impostor, Duration::ZERO).await.unwrap());
    assert!(lock.renew(&impostor, 10 * MINUTE).await.unwrap().is_none());
    assert_eq!(fx.stored(&TASK).await, row);

    // a holder whose lease was taken over cannot release its successor's lock
    fx.expire(&TASK).await;
    let successor = acquire(lock, &spec(TASK, "replica-b")).await;
    let row = fx.stored(&TASK).await;
    assert!(!lock.release(&lease, Duration::ZERO).await.unwrap());
    assert_eq!(fx.stored(&TASK).await, row);
    held_by(lock.try_acquire(&spec(TASK, "replica-c")).await.unwrap());
    assert!(lock.release(&successor, Duration::ZERO).await.unwrap());
}

async fn release_keeps_the_lock_for_at_least_for_so_a_late_replica_does_not_rerun(backend: Backend) {
    let fx = Fixture::new(backend).await;
    let lock = &fx.lock;
    let lease = acquire(lock, &spec(TASK, "replica-a")).await;

    // the run ended at once; a replica firing a moment later must not run it again
    assert!(lock.release(&lease, MINUTE).await.unwrap());
    let (.., locked_until) = fx.stored(&TASK).await;
    assert_eq!(locked_until, lease.locked_at + chrono::Duration::minutes(1));
    let (holder, until) = held_by(lock.try_acquire(&spec(TASK, "replica-b")).await.unwrap());
    assert_eq!((holder.as_str(), until), ("replica-a", locked_until));
}

async fn release_with_nothing_left_of_at_least_for_frees_the_lock_at_once(backend: Backend) {
    let fx = Fixture::new(backend).await;
    let lock = &fx.lock;
    let lease = acquire(lock, &spec(TASK, "replica-a")).await;
    assert!(lock.release(&lease, Duration::ZERO).await.unwrap());
    // a row ending earlier than granted, or (Redis) no key at all
    let stored = fx.try_stored(&TASK).await;
    assert!(stored.is_none_or(|(.., locked_until)| locked_until < lease.locked_until));
    let next = acquire(lock, &spec(TASK, "replica-b")).await;
    assert_eq!(next.fencing_token, FencingToken(2));
}

async fn release_never_lengthens_the_lock(backend: Backend) {
    let fx = Fixture::new(backend).await;
    let lock = &fx.lock;
    let lease = acquire(lock, &spec(TASK, "replica-a")).await;
    assert!(lock.release(&lease, 60 * MINUTE).await.unwrap());
    assert_eq!(fx.stored(&TASK).await.4, lease.locked_until);
}

async fn list_shows_every_task_and_whether_it_is_held(backend: Backend) {
    let fx = Fixture::new(backend).await;
    let lock = &fx.lock;
    assert!(lock.list().await.unwrap().is_empty());
    let running = acquire(lock, &spec("b-running", "replica-a")).await;
    let done = acquire(lock, &spec("a-done", "replica-b")).await;
    assert!(lock.release(&done, Duration::ZERO).await.unwrap());

    let views = lock.list().await.unwrap();
    let summary: Vec<_> = views
        .iter()
        .map(|v| (v.task_name.as_str(), v.locked_by.as_str(), v.fencing_token.0, v.held))
        .collect();
    assert_eq!(
        summary,
        [("a-done", "replica-b", 1, false), ("b-running", "replica-a", 1, true)]
    );
    assert_eq!(
        (views[1].locked_at, views[1].locked_until),
        (running.locked_at, running.locked_until)
    );
}

async fn an_unreachable_store_is_reported_as_unavailable_not_a_panic(backend: Backend) {
    let fx = Fixture::new(backend).await;
    let (lock, store) = fx.lock_on_own_store(2).await;
    let lease = acquire(&lock, &spec(TASK, "replica-a")).await;
    store.close().await;

    // the closed pool's error, as the cause: the job refuses such a fire as unavailable
    let unavailable = |r: Result<_, LockError>| match backend {
        Backend::Postgres => matches!(r, Err(LockError::Database(sqlx::Error::PoolClosed))),
        Backend::Redis => matches!(r, Err(LockError::RedisConnection(_))),
    };
    assert!(unavailable(
        lock.try_acquire(&spec(TASK, "replica-a")).await.map(|_| ())
    ));
    assert!(unavailable(lock.renew(&lease, MINUTE).await.map(|_| ())));
    assert!(unavailable(lock.release(&lease, MINUTE).await.map(|_| ())));
    assert!(unavailable(lock.list().await.map(|_| ())));
}

async fn an_absurd_lease_is_refused_by_the_store_not_a_panic(backend: Backend) {
    let fx = Fixture::new(backend).await;
    let lock = &fx.lock;
    let absurd = LockSpec {
        at_most_for: Duration::MAX,
        ..spec(TASK, "replica-a")
    };
    // PostgreSQL refuses the timestamp overflow; the Redis backend, the lease length itself
    let refused = lock.try_acquire(&absurd).await;
    assert!(
        match backend {
            Backend::Postgres => matches!(refused, Err(LockError::Database(_))),
            Backend::Redis => matches!(refused, Err(LockError::LeaseTooLong { .. })),
        },
        "{refused:?}"
    );
    // and the refused attempt left the lock free
    assert_eq!(
        acquire(lock, &spec(TASK, "replica-a")).await.fencing_token,
        FencingToken(1)
    );
}

//! Fencing at the database, whichever backend holds the lock: a stale holder's transaction
//! writes nothing, and a takeover waits for a transaction that passed the fence.

use std::time::Duration;

use finesettle::domain::FencingToken;
use finesettle::lock::{FenceError, Fenced, JobLock, Lease, fence, guard};
use sqlx::postgres::PgPoolOptions;
use sqlx::{PgPool, Postgres, Transaction};

use crate::common::spawn_app;
use crate::lock::backend::{Backend, Fixture};
use crate::lock::{TASK, acquire, held_by, spec, wait_for_a_lock_waiter, won};

on_each_backend!(
    the_current_token_passes_and_its_write_commits,
    a_stale_token_is_refused_and_writes_nothing,
    a_takeover_waits_for_the_fenced_transaction_and_then_fences_its_holder,
    a_takeover_behind_a_stuck_transaction_reports_the_lock_held_instead_of_hanging,
    a_holder_paused_inside_a_fenced_transaction_is_cut_off_and_writes_nothing,
);

/// A settlement-shaped transaction: the fence, then a write, then commit.
async fn fenced_write(pool: &PgPool, fencing_token: FencingToken, email: &str) -> Result<(), FenceError> {
    let mut tx = fence::begin(pool).await?;
    guard(&mut tx, &TASK, fencing_token).await?;
    insert_member(&mut tx, email).await;
    tx.commit().await?;
    Ok(())
}

async fn insert_member(conn: &mut sqlx::PgConnection, email: &str) {
    sqlx::query("insert into member (name, email) values ('Fenced Writer', $1)")
        .bind(email)
        .execute(conn)
        .await
        .expect("insert a member");
}

/// A fixture on `backend` where replica-a took the lease, which then ran out at once: its holder
/// is now stale.
async fn with_an_expired_holder(backend: Backend) -> (Fixture, Lease) {
    let fx = Fixture::new(backend).await;
    let holder = acquire(&fx.lock, &spec(TASK, "replica-a")).await;
    fx.expire(&TASK).await;
    (fx, holder)
}

/// A transaction that passed the fence with `fencing_token` and is still open.
async fn a_fenced_transaction(pool: &PgPool, fencing_token: FencingToken) -> Transaction<'static, Postgres> {
    let mut tx = fence::begin(pool).await.unwrap();
    guard(&mut tx, &TASK, fencing_token)
        .await
        .expect("still the current token");
    tx
}

async fn members(pool: &PgPool) -> i64 {
    sqlx::query_scalar("select count(*) from member")
        .fetch_one(pool)
        .await
        .unwrap()
}

async fn the_current_token_passes_and_its_write_commits(backend: Backend) {
    let fx = Fixture::new(backend).await;
    let (app, lock) = (&fx.app, &fx.lock);
    let lease = acquire(lock, &spec(TASK, "replica-a")).await;
    fenced_write(&app.pool, lease.fencing_token, "current@example.org")
        .await
        .expect("the holder writes");
    assert_eq!(members(&app.pool).await, 1);
}

async fn a_stale_token_is_refused_and_writes_nothing(backend: Backend) {
    let (fx, paused) = with_an_expired_holder(backend).await;
    let (app, lock) = (&fx.app, &fx.lock);
    let successor = acquire(lock, &spec(TASK, "replica-b")).await;
    let before = app.row_counts().await;

    // the paused holder wakes up and carries on as if it still held the lock
    let refused = fenced_write(&app.pool, paused.fencing_token, "stale@example.org").await;
    match refused {
        Err(FenceError::Fenced(fenced)) => assert_eq!(
            fenced,
            Fenced {
                task_name: TASK,
                token: paused.fencing_token
            }
        ),
        other => panic!("expected Fenced, got {other:?}"),
    }
    assert_eq!(app.row_counts().await, before);

    // a token from the future is no better than a stale one
    let future = fenced_write(
        &app.pool,
        FencingToken(successor.fencing_token.0 + 1),
        "future@example.org",
    )
    .await;
    assert!(matches!(future, Err(FenceError::Fenced(_))));
    fenced_write(&app.pool, successor.fencing_token, "successor@example.org")
        .await
        .expect("the successor writes");
    assert_eq!(members(&app.pool).await, 1);
}

#[tokio::test]
async fn an_unknown_task_is_fenced() {
    let app = spawn_app().await;
    let mut tx = fence::begin(&app.pool).await.unwrap();
    assert!(matches!(
        guard(&mut tx, &"no-such-task".into(), FencingToken(1)).await,
        Err(FenceError::Fenced(_))
    ));
}

async fn a_takeover_waits_for_the_fenced_transaction_and_then_fences_its_holder(backend: Backend) {
    // the lease runs out while a transaction that passed the fence is still open
    let (fx, holder) = with_an_expired_holder(backend).await;
    let app = &fx.app;
    let mut tx = a_fenced_transaction(&app.pool, holder.fencing_token).await;

    let patient = fx.lock_with_row_wait(Duration::from_secs(60));
    let takeover = tokio::spawn(async move { patient.try_acquire(&spec(TASK, "replica-b")).await });
    wait_for_a_lock_waiter(&app.pool).await;
    assert!(
        !takeover.is_finished(),
        "the takeover must wait for the fenced transaction"
    );

    // the token is still current inside the transaction: its write commits
    insert_member(&mut tx, "last-write@example.org").await;
    tx.commit().await.unwrap();
    let successor = won(takeover.await.unwrap().unwrap());
    assert_eq!(successor.fencing_token, FencingToken(holder.fencing_token.0 + 1));
    assert_eq!(members(&app.pool).await, 1);

    // from now on the old holder is refused
    let refused = fenced_write(&app.pool, holder.fencing_token, "too-late@example.org").await;
    assert!(matches!(refused, Err(FenceError::Fenced(_))));
    assert_eq!(members(&app.pool).await, 1);
}

async fn a_takeover_behind_a_stuck_transaction_reports_the_lock_held_instead_of_hanging(backend: Backend) {
    let (fx, holder) = with_an_expired_holder(backend).await;
    let app = &fx.app;
    // a holder paused in the middle of a fenced transaction keeps the key-share lock
    let stuck = a_fenced_transaction(&app.pool, holder.fencing_token).await;

    let impatient = fx.lock_with_row_wait(Duration::from_millis(100));
    let (holder_name, _) = held_by(impatient.try_acquire(&spec(TASK, "replica-b")).await.unwrap());
    assert_eq!(holder_name, "replica-a");

    // once the stuck transaction ends, the expired lock is taken over (with Redis, the attempt
    // that gave up used a token it never published, so the next one may be higher than 2)
    stuck.rollback().await.unwrap();
    let successor = won(impatient.try_acquire(&spec(TASK, "replica-b")).await.unwrap());
    assert!(successor.fencing_token > holder.fencing_token);
    assert!(matches!(
        fenced_write(&app.pool, holder.fencing_token, "stuck@example.org").await,
        Err(FenceError::Fenced(_))
    ));
}

#[tokio::test]
async fn a_fenced_transaction_may_not_idle_forever_from_its_first_moment() {
    let app = spawn_app().await;
    let lock = JobLock::postgres(app.pool.clone());
    let lease = acquire(&lock, &spec(TASK, "replica-a")).await;
    // One connection, so that the check after the rollback reads the same session.
    let one = PgPoolOptions::new()
        .max_connections(1)
        .connect_with(app.pool.connect_options().as_ref().clone())
        .await
        .unwrap();
    // A process stopped right after its `begin` reached the server (before the guard, before any
    // other statement) must not leave a transaction that idles without a limit.
    let mut tx = fence::begin(&one).await.unwrap();
    assert_eq!(
        idle_limit(&mut tx).await,
        "10s",
        "in force as soon as the transaction is"
    );
    guard(&mut tx, &TASK, lease.fencing_token).await.unwrap();
    assert_eq!(idle_limit(&mut tx).await, "10s");
    // committed, not rolled back: a rollback would undo even a session-wide `set`
    tx.commit().await.unwrap();
    // the limit was local to that transaction: the same session has none
    let mut session = one.acquire().await.unwrap();
    assert_eq!(idle_limit(&mut session).await, "0");
}

async fn idle_limit(conn: &mut sqlx::PgConnection) -> String {
    sqlx::query_scalar("show idle_in_transaction_session_timeout")
        .fetch_one(conn)
        .await
        .unwrap()
}

async fn a_holder_paused_inside_a_fenced_transaction_is_cut_off_and_writes_nothing(backend: Backend) {
    let (fx, holder) = with_an_expired_holder(backend).await;
    let (app, lock) = (&fx.app, &fx.lock);
    let mut paused = a_fenced_transaction(&app.pool, holder.fencing_token).await;
    // paused (SIGSTOP, GC...) between two statements, past the idle limit
    tokio::time::sleep(finesettle::lock::fence::FENCED_IDLE_TIMEOUT + Duration::from_secs(2)).await;

    // the database ended that session: the lock row is free again and the lease can be taken over
    let successor = won(lock.try_acquire(&spec(TASK, "replica-b")).await.unwrap());
    assert_eq!(successor.fencing_token, FencingToken(holder.fencing_token.0 + 1));
    // and the paused holder's next write fails instead of landing
    let woke = sqlx::query("insert into member (name, email) values ('Paused', 'paused@example.org')")
        .execute(&mut *paused)
        .await;
    assert!(woke.is_err(), "the paused holder's write must fail");
    assert_eq!(members(&app.pool).await, 0);
}

//! The Redis backend's own cases: what it keeps in Redis, the fencing token it publishes to
//! PostgreSQL (and why a late or lost one changes nothing), Redis or PostgreSQL unreachable, and
//! the service running its job under the Redis lock.

use std::time::Duration;

use chrono::Utc;
use deadpool_redis::Pool;
use finesettle::config::LockBackend;
use finesettle::domain::{FencingToken, OwnerToken};
use finesettle::lock::{FenceError, JobLock, Lease, LockError, LockSpec, fence, guard};
use serde_json::json;
use sqlx::PgPool;

use crate::common::triggers::create_trigger;
use crate::common::{spawn_app, spawn_app_with_redis};
use crate::lock::backend::{Backend, Fixture};
use crate::lock::{MINUTE, TASK, acquire, spec, stored};

async fn redis_get(redis: &Pool, key: &str) -> Option<String> {
    let mut conn = redis.get().await.expect("a Redis connection");
    redis::cmd("GET").arg(key).query_async(&mut conn).await.unwrap()
}

async fn redis_int(redis: &Pool, command: &str, key: &str) -> i64 {
    let mut conn = redis.get().await.expect("a Redis connection");
    redis::cmd(command).arg(key).query_async(&mut conn).await.unwrap()
}

/// Whether a settlement transaction carrying `token` passes the fence.
async fn passes_the_fence(pool: &PgPool, token: FencingToken) -> bool {
    let mut tx = fence::begin(pool).await.unwrap();
    match guard(&mut tx, &TASK, token).await {
        Ok(()) => true,
        Err(FenceError::Fenced(_)) => false,
        Err(e) => panic!("the fence check failed: {e}"),
    }
}

#[tokio::test]
async fn the_lock_is_a_key_set_nx_px_on_the_redis_clock_and_its_token_is_published() {
    let fx = Fixture::new(Backend::Redis).await;
    let (redis_lock, redis) = fx.redis().unwrap();
    let lease = acquire(&fx.lock, &spec(TASK, "replica-a")).await;
    assert_eq!(
        (lease.fencing_token, lease.locked_by.as_str()),
        (FencingToken(1), "replica-a")
    );
    assert!(!lease.owner_token.0.is_nil());

    let key = redis_lock.lock_key(&TASK);
    let value = redis_get(redis, &key).await.expect("the key is set");
    let locked_at_ms = lease.locked_at.timestamp_millis();
    assert_eq!(value, format!("{}:1:{locked_at_ms}:replica-a", lease.owner_token));
    let ttl = redis_int(redis, "PTTL", &key).await;
    assert!(0 < ttl && ttl <= 600_000, "PTTL {ttl}");
    // the lease ends exactly when Redis expires the key, about at_most_for after it was taken
    assert_eq!(
        redis_int(redis, "PEXPIRETIME", &key).await,
        lease.locked_until.timestamp_millis()
    );
    let granted = lease.locked_until - lease.locked_at;
    assert!(granted <= chrono::Duration::minutes(10) && granted > chrono::Duration::minutes(9));
    assert_eq!(
        redis_get(redis, &redis_lock.fencing_key(&TASK)).await.as_deref(),
        Some("1")
    );

    // published before the winner could write anything: the fence knows the token
    assert_eq!(
        stored(fx.pool(), &TASK).await,
        (
            "replica-a".to_owned(),
            lease.owner_token,
            FencingToken(1),
            lease.locked_at,
            lease.locked_until
        )
    );
    assert!(passes_the_fence(fx.pool(), FencingToken(1)).await);
}

#[tokio::test]
async fn redis_unreachable_is_unavailable_without_a_panic_or_a_hang_and_changes_nothing() {
    let app = spawn_app().await;
    // a port nobody listens on
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .unwrap()
        .port();
    let redis = finesettle::store::redis::pool(&format!("redis://127.0.0.1:{port}")).unwrap();
    let lock = JobLock::redis(redis, app.pool.clone());
    sqlx::query(
        "insert into task_lock (task_name, locked_until, locked_at, locked_by, owner_token, fencing_token)
         values ($1, now() - interval '1 minute', now() - interval '2 minutes', 'replica-a', gen_random_uuid(), 3)",
    )
    .bind(TASK)
    .execute(&app.pool)
    .await
    .unwrap();
    let before = stored(&app.pool, &TASK).await;
    let now = Utc::now();
    let lease = Lease {
        task_name: TASK.to_owned(),
        locked_by: "replica-a".to_owned(),
        owner_token: OwnerToken::random(),
        fencing_token: FencingToken(4),
        locked_at: now,
        locked_until: now + chrono::Duration::minutes(1),
        asked_at: tokio::time::Instant::now(),
    };

    // each call is bounded by the lock itself; this bound only turns a hang into a failure
    let bounded = Duration::from_secs(60);
    // refused at once (no connection), or cut off by the lock's own bound: never a hang
    let unavailable = |r: Result<Result<(), LockError>, _>| {
        matches!(r, Ok(Err(LockError::RedisConnection(_) | LockError::Timeout { .. })))
    };
    let acquired = tokio::time::timeout(bounded, lock.try_acquire(&spec(TASK, "replica-b"))).await;
    assert!(unavailable(acquired.map(|r| r.map(|_| ()))));
    let extended = tokio::time::timeout(bounded, lock.renew(&lease, MINUTE)).await;
    assert!(unavailable(extended.map(|r| r.map(|_| ()))));
    let released = tokio::time::timeout(bounded, lock.release(&lease, MINUTE)).await;
    assert!(unavailable(released.map(|r| r.map(|_| ()))));
    let listed = tokio::time::timeout(bounded, lock.list()).await;
    assert!(unavailable(listed.map(|r| r.map(|_| ()))));
    assert_eq!(stored(&app.pool, &TASK).await, before, "nothing was published");
}

#[tokio::test]
async fn a_winner_that_cannot_publish_its_token_gives_the_redis_lock_back() {
    let fx = Fixture::new(Backend::Redis).await;
    // PostgreSQL refuses every write to task_lock, as it would when down for writes
    create_trigger(
        fx.pool(),
        "refuse_task_lock_writes",
        "before insert or update on task_lock for each row",
        "raise exception 'task_lock is read-only';",
    )
    .await;

    let refused = fx.lock.try_acquire(&spec(TASK, "replica-a")).await;
    assert!(matches!(refused, Err(LockError::Database(_))), "{refused:?}");
    assert_eq!(fx.try_stored(&TASK).await, None, "the key was given back");

    sqlx::raw_sql("drop trigger refuse_task_lock_writes on task_lock")
        .execute(fx.pool())
        .await
        .unwrap();
    // free at once, not after at_most_for; token 1 was spent on the attempt that never published
    let lease = acquire(&fx.lock, &spec(TASK, "replica-a")).await;
    assert_eq!(lease.fencing_token, FencingToken(2));
    assert!(passes_the_fence(fx.pool(), FencingToken(2)).await);
}

#[tokio::test]
async fn a_winner_publishing_late_changes_nothing_and_stays_fenced() {
    let fx = Fixture::new(Backend::Redis).await;
    let (redis_lock, _) = fx.redis().unwrap();
    let paused = acquire(&fx.lock, &spec(TASK, "replica-a")).await;
    // replica-a pauses past its TTL; replica-b takes the lock over and publishes token 2
    fx.expire(&TASK).await;
    let successor = acquire(&fx.lock, &spec(TASK, "replica-b")).await;
    assert_eq!(successor.fencing_token, FencingToken(paused.fencing_token.0 + 1));
    let row = stored(fx.pool(), &TASK).await;

    // replica-a wakes up and (re)publishes its older token: refused, the row is unchanged
    assert!(!redis_lock.publish(&paused).await.unwrap());
    assert_eq!(stored(fx.pool(), &TASK).await, row);
    assert!(!passes_the_fence(fx.pool(), paused.fencing_token).await);
    assert!(passes_the_fence(fx.pool(), successor.fencing_token).await);
    // nor can it touch the successor's key
    assert!(fx.lock.renew(&paused, MINUTE).await.unwrap().is_none());
    assert!(!fx.lock.release(&paused, Duration::ZERO).await.unwrap());
    assert_eq!(fx.stored(&TASK).await.2, successor.fencing_token);
}

#[tokio::test]
async fn tokens_continue_above_the_published_one_when_redis_lost_its_counter() {
    let fx = Fixture::new(Backend::Redis).await;
    let (redis_lock, redis) = fx.redis().unwrap();
    for _ in 0..2 {
        let lease = acquire(&fx.lock, &spec(TASK, "replica-a")).await;
        assert!(fx.lock.release(&lease, Duration::ZERO).await.unwrap());
    }
    let paused = acquire(&fx.lock, &spec(TASK, "replica-a")).await;
    assert_eq!(paused.fencing_token, FencingToken(3));

    // Redis loses the task's keys: a flush, a restart without persistence, a failover to a replica
    // that lagged. The lock is free at once, and the counter would start again at 1.
    let mut conn = redis.get().await.unwrap();
    let () = redis::cmd("DEL")
        .arg(redis_lock.lock_key(&TASK))
        .arg(redis_lock.fencing_key(&TASK))
        .query_async(&mut conn)
        .await
        .unwrap();

    let successor = acquire(&fx.lock, &spec(TASK, "replica-b")).await;
    assert_eq!(
        successor.fencing_token,
        FencingToken(4),
        "numbered above the published token"
    );
    assert_eq!(
        redis_get(redis, &redis_lock.fencing_key(&TASK)).await.as_deref(),
        Some("4")
    );
    assert!(!passes_the_fence(fx.pool(), paused.fencing_token).await);
    assert!(passes_the_fence(fx.pool(), successor.fencing_token).await);
    let next = {
        assert!(fx.lock.release(&successor, Duration::ZERO).await.unwrap());
        acquire(&fx.lock, &spec(TASK, "replica-b")).await
    };
    assert_eq!(next.fencing_token, FencingToken(5));
}

#[tokio::test]
async fn the_admin_view_reads_live_expiries_from_redis_and_the_release_from_task_lock() {
    let fx = Fixture::new(Backend::Redis).await;
    let short = LockSpec {
        at_most_for: MINUTE,
        ..spec(TASK, "replica-a")
    };
    let lease = acquire(&fx.lock, &short).await;
    let renewed = fx.lock.renew(&lease, 10 * MINUTE).await.unwrap().expect("still held");
    assert!(renewed.locked_until > lease.locked_until);

    let view = fx.lock.list().await.unwrap().remove(0);
    assert!(view.held);
    assert_eq!(
        (
            view.locked_by.as_str(),
            view.fencing_token,
            view.locked_at,
            view.locked_until
        ),
        ("replica-a", FencingToken(1), lease.locked_at, renewed.locked_until)
    );
    // renewals stay in Redis: the published row keeps the granted expiry
    assert_eq!(stored(fx.pool(), &TASK).await.4, lease.locked_until);

    // released, kept for at_least_for: both Redis and the row end then
    assert!(fx.lock.release(&renewed, MINUTE).await.unwrap());
    let kept_until = lease.locked_at + chrono::Duration::minutes(1);
    assert_eq!(fx.stored(&TASK).await.4, kept_until);
    assert_eq!(stored(fx.pool(), &TASK).await.4, kept_until);
    let view = fx.lock.list().await.unwrap().remove(0);
    assert_eq!((view.held, view.locked_until), (true, kept_until));

    // once the key is gone the task is listed from the row, not held
    fx.expire(&TASK).await;
    let view = fx.lock.list().await.unwrap().remove(0);
    assert_eq!(
        (
            view.held,
            view.locked_by.as_str(),
            view.fencing_token,
            view.locked_until
        ),
        (false, "replica-a", FencingToken(1), kept_until)
    );
}

#[tokio::test]
async fn the_backend_is_chosen_from_the_settings_in_one_place() {
    let app = spawn_app().await;
    let redis = finesettle::store::redis::pool("redis://127.0.0.1:6379").unwrap();
    let mut settings = app.settings.clone();
    assert!(matches!(
        JobLock::from_settings(app.pool.clone(), Some(redis.clone()), &settings).unwrap(),
        JobLock::Postgres(_)
    ));
    settings.job.lock_backend = LockBackend::Redis;
    assert!(matches!(
        JobLock::from_settings(app.pool.clone(), Some(redis), &settings).unwrap(),
        JobLock::Redis(_)
    ));
    assert!(JobLock::from_settings(app.pool.clone(), None, &settings).is_err());
}

#[tokio::test]
async fn the_service_settles_under_the_redis_lock_when_configured_so() {
    let (app, redis) = spawn_app_with_redis(|settings| settings.job.lock_backend = LockBackend::Redis).await;
    let job = "/api/v1/jobs/settle-fines";
    let date = app.today().await.pred_opt().unwrap();
    let execution = app
        .post(&format!("{job}/runs"), json!({ "business_date": date }))
        .await
        .ok(202)
        .clone();
    let token = execution["fencing_token"].as_i64().unwrap();
    let mut status = execution["status"].clone();
    for _ in 0..300 {
        if status != "RUNNING" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        let page = app.get(&format!("{job}/executions")).await;
        let items = page.ok(200)["items"].as_array().unwrap().clone();
        status = items.iter().find(|e| e["id"] == execution["id"]).unwrap()["status"].clone();
    }
    assert_eq!(status, "SUCCESS");

    // the lock was taken in Redis and is kept there for lock_at_least_for after the run
    let value = redis_get(&redis.pool(), "finesettle:lock:{settle-fines}")
        .await
        .expect("the Redis lock key");
    let parts: Vec<&str> = value.splitn(4, ':').collect();
    assert_eq!(
        (parts[1], parts[3]),
        (token.to_string().as_str(), "test-replica"),
        "{value}"
    );
    let locks = app.get("/api/v1/locks").await;
    let lock = &locks.ok(200)["items"][0];
    assert_eq!(
        (
            &lock["task_name"],
            &lock["locked_by"],
            &lock["fencing_token"],
            &lock["held"]
        ),
        (
            &json!("settle-fines"),
            &json!("test-replica"),
            &json!(token),
            &json!(true)
        )
    );
}

//! Fencing tokens across a promotion that lost the last acquisitions (issue 33: the counter went
//! back from 17 to 1 and tokens 2-6 were issued a second time).

use std::time::Duration;

use finesettle::lock::JobLock;
use sqlx::PgPool;

use super::cluster::Node;
use super::connect;
use crate::common::redis::TestRedis;
use crate::lock::{TASK, acquire, spec};

/// The first token of timeline 2: above every token timeline 1 can issue.
const FIRST_OF_TIMELINE_2: i64 = (1 << 32) + 1;

/// Takes the lock and frees it at once; answers its fencing token.
async fn take_and_release(lock: &JobLock) -> i64 {
    let lease = acquire(lock, &spec(TASK, "replica-a")).await;
    assert!(lock.release(&lease, Duration::ZERO).await.expect("release answers"));
    lease.fencing_token.0
}

/// A primary whose lock issued tokens 1 through 6, and a standby promoted from a backup taken
/// after token 1: the promoted node's counter says 1.
async fn promoted_after_losing_tokens_2_to_6() -> (Node, PgPool) {
    let mut primary = Node::primary().await;
    primary.execute("postgres", "create database finesettle").await;
    let pool = connect(&primary.url("finesettle")).await;
    let lock = JobLock::postgres(pool.clone());
    assert_eq!(take_and_release(&lock).await, 1);
    let mut standby = Node::standby_of(&primary).await;
    for expected in 2..=6 {
        assert_eq!(take_and_release(&lock).await, expected, "timeline 1 counts from 1");
    }
    pool.close().await;
    primary.kill().await;
    standby.start().await;
    standby.promote().await;
    let pool = connect(&standby.url("finesettle")).await;
    let counter: i64 = sqlx::query_scalar("select fencing_token from task_lock where task_name = $1")
        .bind(TASK)
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(counter, 1, "the promotion lost the acquisitions after the backup");
    (standby, pool)
}

#[tokio::test]
async fn a_promoted_standby_numbers_postgres_tokens_above_every_token_of_the_old_timeline() {
    let (_standby, pool) = promoted_after_losing_tokens_2_to_6().await;
    let lock = JobLock::postgres(pool);
    let first = take_and_release(&lock).await;
    assert_eq!(first, FIRST_OF_TIMELINE_2, "token 2 was issued on timeline 1 already");
    assert_eq!(take_and_release(&lock).await, first + 1);
}

#[tokio::test]
async fn a_promoted_standby_numbers_redis_tokens_above_every_token_of_the_old_timeline() {
    let (_standby, pool) = promoted_after_losing_tokens_2_to_6().await;
    // A Redis that lost its counter at the same time: only the published floor is left.
    let redis = TestRedis::create().await;
    let lock = JobLock::redis(redis.pool(), pool);
    let first = take_and_release(&lock).await;
    assert_eq!(first, FIRST_OF_TIMELINE_2, "token 2 was issued on timeline 1 already");
    assert_eq!(take_and_release(&lock).await, first + 1);
}

//! The Redis connection pool (optional: only when `REDIS_URL` is set).

use std::time::Duration;

use deadpool_redis::{Config, Pool, Runtime};

pub fn pool(url: &str) -> anyhow::Result<Pool> {
    let mut config = Config::from_url(url);
    let mut pool_config = deadpool_redis::PoolConfig::new(16);
    // Never wait forever on an unreachable Redis: callers treat a timeout as "unavailable".
    pool_config.timeouts.wait = Some(Duration::from_secs(2));
    pool_config.timeouts.create = Some(Duration::from_secs(2));
    pool_config.timeouts.recycle = Some(Duration::from_secs(2));
    config.pool = Some(pool_config);
    Ok(config.create_pool(Some(Runtime::Tokio1))?)
}

/// Whether Redis answers a PING within the pool's timeouts.
pub async fn ping(pool: &Pool) -> bool {
    let Ok(mut conn) = pool.get().await else { return false };
    let reply: redis::RedisResult<String> = redis::cmd("PING").query_async(&mut conn).await;
    reply.is_ok()
}

//! One Redis logical database per test.
//!
//! Tests talk to a real Redis: the one in `REDIS_URL` (default `redis://127.0.0.1:6379`) when it
//! answers, otherwise one started with testcontainers. Each test leases one of the logical
//! databases 1 to 15 (a `SET NX EX` lease in database 0), starts from it empty and may flush it
//! (`FLUSHDB`) without touching any other test; the database is flushed and its lease released
//! when the `TestRedis` is dropped. Tests that run in parallel wait for a free database.
//! Database 0 is left to tests that isolate themselves by key prefix.

use std::time::Duration;

use testcontainers::{ContainerAsync, ImageExt};
use testcontainers_modules::redis::{REDIS_PORT, Redis};
use tokio::sync::OnceCell;

use super::{containers, images};

/// The server tests use, as a URL without a database number.
static SERVER: OnceCell<String> = OnceCell::const_new();
/// The run's container, if any (removed by the run's reaper, not by this process).
static CONTAINER: std::sync::OnceLock<ContainerAsync<Redis>> = std::sync::OnceLock::new();

const DEFAULT_SERVER: &str = "redis://127.0.0.1:6379";
/// Logical databases handed out to tests (Redis has 16 by default; 0 keeps the leases).
const DATABASES: std::ops::RangeInclusive<u8> = 1..=15;
/// A lease outlives any test; it only matters when a test process was killed without cleanup.
const LEASE_SECONDS: u64 = 15 * 60;

async fn server_url() -> &'static str {
    SERVER
        .get_or_init(|| async {
            let configured = std::env::var("REDIS_URL").unwrap_or_else(|_| DEFAULT_SERVER.to_owned());
            let server = without_database(&configured);
            if answers(&server) {
                return server;
            }
            eprintln!("Redis at {configured} is not reachable; using the test run's container");
            // The module's default image is Redis 5; the queue scripts need 6.2 or newer.
            let (name, tag) = images::redis();
            let container = containers::shared(Redis::default().with_name(name).with_tag(tag), "redis").await;
            let port = container.get_host_port_ipv4(REDIS_PORT).await.expect("container port");
            let host = container.get_host().await.expect("container host");
            let _ = CONTAINER.set(container);
            format!("redis://{host}:{port}")
        })
        .await
}

/// `url` without its `/db` path.
fn without_database(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("redis", url));
    let authority = rest.split_once('/').map_or(rest, |(authority, _)| authority);
    format!("{scheme}://{authority}")
}

fn answers(server: &str) -> bool {
    let Ok(client) = redis::Client::open(server) else {
        return false;
    };
    let Ok(mut conn) = client.get_connection_with_timeout(Duration::from_secs(1)) else {
        return false;
    };
    redis::cmd("PING").query::<String>(&mut conn).is_ok()
}

fn connection(url: &str) -> redis::Connection {
    redis::Client::open(url)
        .and_then(|client| client.get_connection_with_timeout(Duration::from_secs(5)))
        .expect("connect to the test Redis")
}

/// A logical database leased by one test.
pub struct TestRedis {
    server: String,
    db: u8,
    lease_token: String,
}

impl TestRedis {
    /// Leases a free database and empties it (a killed test may have left keys behind).
    pub async fn create() -> Self {
        let server = server_url().await.to_owned();
        let lease_token = uuid::Uuid::new_v4().to_string();
        loop {
            let mut leases = connection(&format!("{server}/0"));
            for db in DATABASES {
                let taken: Option<String> = redis::cmd("SET")
                    .arg(lease_key(db))
                    .arg(&lease_token)
                    .arg("NX")
                    .arg("EX")
                    .arg(LEASE_SECONDS)
                    .query(&mut leases)
                    .expect("lease a test database");
                if taken.is_some() {
                    let redis = TestRedis {
                        server,
                        db,
                        lease_token,
                    };
                    redis.flush();
                    return redis;
                }
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The URL of the leased database, as `REDIS_URL` would name it.
    pub fn url(&self) -> String {
        format!("{}/{}", self.server, self.db)
    }

    /// A pool on the leased database, built as the service builds its own.
    pub fn pool(&self) -> deadpool_redis::Pool {
        finesettle::store::redis::pool(&self.url()).expect("a Redis pool")
    }

    /// Empties the leased database: what a FLUSHALL does to the service, for this test only.
    pub fn flush(&self) {
        self.try_flush().expect("flush the test database");
    }

    fn try_flush(&self) -> redis::RedisResult<()> {
        let client = redis::Client::open(self.url())?;
        redis::cmd("FLUSHDB").query(&mut client.get_connection_with_timeout(Duration::from_secs(5))?)
    }
}

fn lease_key(db: u8) -> String {
    format!("finesettle:test:redis-db:{db}")
}

/// Releases the lease only if it is still ours (it may have expired and been taken over).
const RELEASE: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then
    return redis.call('DEL', KEYS[1])
end
return 0
";

impl Drop for TestRedis {
    fn drop(&mut self) {
        // Plain blocking calls (the sync client needs no runtime), and no panic: an unreachable
        // Redis only leaves a lease that expires by itself.
        let _ = self.try_flush();
        let release = || -> redis::RedisResult<i64> {
            let client = redis::Client::open(format!("{}/0", self.server))?;
            let mut conn = client.get_connection_with_timeout(Duration::from_secs(5))?;
            redis::Script::new(RELEASE)
                .key(lease_key(self.db))
                .arg(&self.lease_token)
                .invoke(&mut conn)
        };
        let _ = release();
    }
}

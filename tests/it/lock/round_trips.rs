//! What a lock cycle costs on the wire: taking the PostgreSQL lock and releasing it are each one
//! round trip, one statement committed on its own (issue 21), so a cycle costs what its floor
//! costs: two durable commits. `load/bench-lock` measures the time; this counts the messages.
//!
//! The lock runs on a pool whose connections go through [`WireCounter`], a TCP relay that counts
//! the client's turns: each time the client writes after the server last answered is one round
//! trip. The same pool's plain `select 1` is the yardstick, so whatever the pool itself sends on a
//! checkout counts alike on both sides.

use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use finesettle::lock::{Acquired, JobLock};
use sqlx::PgPool;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::common::spawn_app;
use crate::lock::{TASK, spec};

#[tokio::test]
async fn taking_and_releasing_the_lock_are_one_round_trip_each() {
    let app = spawn_app().await;
    let counter = WireCounter::start(app.database.url()).await;
    let pool = counter.pool(app.database.url()).await;
    let lock = JobLock::postgres(pool.clone());
    let spec = spec(TASK, "replica-a");
    // warm: the statements are prepared on the connection, as they are after the first fire
    let lease = match lock.try_acquire(&spec).await.unwrap() {
        Acquired::Won(lease) => lease,
        held => panic!("expected the lock, got {held:?}"),
    };
    assert!(lock.release(&lease, spec.at_least_for).await.unwrap());
    sqlx::query("select 1").execute(&pool).await.unwrap();

    let one_statement = counter
        .round_trips(async { sqlx::query("select 1").execute(&pool).await.unwrap() })
        .await;
    let (acquired, acquisition) = counter.measure(lock.try_acquire(&spec)).await;
    let Acquired::Won(lease) = acquired.unwrap() else {
        panic!("the lock was free")
    };
    let (released, release) = counter.measure(lock.release(&lease, spec.at_least_for)).await;
    assert!(released.unwrap());

    assert_eq!(
        (acquisition, release),
        (one_statement, one_statement),
        "the acquisition and the release must each cost what one statement costs \
         ({one_statement} round trips on this pool)"
    );
}

/// A TCP relay in front of the test's PostgreSQL that counts the client's turns.
struct WireCounter {
    port: u16,
    turns: Arc<AtomicUsize>,
}

impl WireCounter {
    /// Relays every connection made to it to the server of `database_url`.
    async fn start(database_url: &str) -> Self {
        let options = PgConnectOptions::from_str(database_url).expect("a database URL");
        let upstream = format!("{}:{}", options.get_host(), options.get_port());
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let turns = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&turns);
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let server = TcpStream::connect(&upstream).await.expect("reach the test server");
                tokio::spawn(relay(client, server, Arc::clone(&counted)));
            }
        });
        WireCounter { port, turns }
    }

    /// A pool of one connection to `database_url`'s database through the relay, without TLS (the
    /// relay counts reads, which TLS records would blur).
    async fn pool(&self, database_url: &str) -> PgPool {
        let options = PgConnectOptions::from_str(database_url)
            .unwrap()
            .host("127.0.0.1")
            .port(self.port)
            .ssl_mode(sqlx::postgres::PgSslMode::Disable);
        PgPoolOptions::new()
            .max_connections(1)
            .connect_with(options)
            .await
            .expect("connect through the relay")
    }

    /// The round trips `work` made, with its output.
    async fn measure<T>(&self, work: impl Future<Output = T>) -> (T, usize) {
        let before = self.turns.load(Ordering::SeqCst);
        let output = work.await;
        (output, self.turns.load(Ordering::SeqCst) - before)
    }

    async fn round_trips(&self, work: impl Future<Output = impl Sized>) -> usize {
        self.measure(work).await.1
    }
}

/// Copies both ways until either side closes, counting a turn each time the client sends after
/// the server last sent (or for the first time).
async fn relay(mut client: TcpStream, mut server: TcpStream, turns: Arc<AtomicUsize>) {
    let server_spoke_last = AtomicBool::new(true);
    let (client_read, client_write) = client.split();
    let (server_read, server_write) = server.split();
    let upstream = pipe(client_read, server_write, || {
        if server_spoke_last.swap(false, Ordering::SeqCst) {
            turns.fetch_add(1, Ordering::SeqCst);
        }
    });
    let downstream = pipe(server_read, client_write, || {
        server_spoke_last.store(true, Ordering::SeqCst)
    });
    tokio::select! {
        () = upstream => {}
        () = downstream => {}
    }
}

/// Copies `from` to `to` until either closes, calling `on_read` for each chunk before passing it on.
async fn pipe(mut from: impl AsyncRead + Unpin, mut to: impl AsyncWrite + Unpin, on_read: impl Fn()) {
    let mut buffer = vec![0; 64 * 1024];
    loop {
        let n = from.read(&mut buffer).await.unwrap_or(0);
        if n == 0 {
            return;
        }
        on_read();
        if to.write_all(&buffer[..n]).await.is_err() {
            return;
        }
    }
}

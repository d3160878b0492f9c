//! The HTTP server: axum's router on hyper's HTTP/1.1 connections, with the two limits
//! `axum::serve` does not offer.
//!
//! - **A header read timeout.** `FINESETTLE_REQUEST_TIMEOUT` starts once a request's headers are
//!   complete; before that, nothing bounded a client that sends its headers a byte at a time, or
//!   none at all. hyper's timer closes such a connection after `FINESETTLE_HEADER_READ_TIMEOUT`,
//!   and also a kept-alive connection that sits idle that long between requests.
//! - **A bound on connections** (`FINESETTLE_MAX_HTTP_CONNECTIONS`). The loop accepts only while it
//!   holds a permit; further clients wait in the kernel's listen backlog until a connection ends,
//!   so a crowd of idle sockets cannot take every file descriptor (the database pool, Redis and
//!   the logs need theirs).
//!
//! HTTP/1.1 only: hyper's automatic HTTP/2 detection waits for a client's first bytes with no
//! timeout, which would reopen the hole above; the service is not served over cleartext HTTP/2.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// What one client, or a crowd of them, may hold.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    pub header_read_timeout: Duration,
    pub max_connections: usize,
}

/// Serves `router` on `listener` until `stop` is cancelled; then stops accepting, closes idle
/// connections and waits for the requests in flight.
pub async fn serve(listener: TcpListener, router: Router, limits: ConnectionLimits, stop: CancellationToken) {
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    let graceful = GracefulShutdown::new();
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    loop {
        let permit = tokio::select! {
            permit = Arc::clone(&permits).acquire_owned() => permit.expect("the semaphore is never closed"),
            () = stop.cancelled() => break,
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    // Answers go out as soon as they are written, not after the client's ACK of
                    // the previous segment (Nagle), which a kept-alive client would wait for.
                    let _ = stream.set_nodelay(true);
                    stream
                }
                Err(error) => {
                    // Out of file descriptors, say: wait a little rather than spin.
                    tracing::warn!(error = %error, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = stop.cancelled() => break,
        };
        let service = TowerToHyperService::new(router.clone());
        let connection = graceful.watch(http.serve_connection(TokioIo::new(stream), service));
        tokio::spawn(async move {
            // A client that went away, or timed out sending its headers: its business, not ours.
            if let Err(error) = connection.await {
                tracing::debug!(error = %error, "connection ended with an error");
            }
            drop(permit);
        });
    }
    drop(listener);
    graceful.shutdown().await;
}

//! A TCP proxy between the application and PostgreSQL that a test can cut and restore: a real
//! database blip (every connection dropped, new ones refused) without stopping the server that
//! other tests share.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// A running proxy. Dropping it stops it and drops its connections.
pub struct DbProxy {
    addr: SocketAddr,
    state: Arc<State>,
    accept: JoinHandle<()>,
}

struct State {
    /// Where new connections go: [`DbProxy::switch_to`] moves it (a failover behind a proxy).
    upstream: Mutex<SocketAddr>,
    /// While false, new connections are accepted and dropped at once.
    open: AtomicBool,
    /// Cancelled by [`DbProxy::cut`]: ends every connection made before it.
    connections: Mutex<CancellationToken>,
}

impl DbProxy {
    /// Listens on a port of the system's choosing and forwards every connection to `upstream`.
    pub fn start(upstream: SocketAddr) -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let listener = TcpListener::from_std(listener).expect("a tokio listener");
        let state = Arc::new(State {
            upstream: Mutex::new(upstream),
            open: AtomicBool::new(true),
            connections: Mutex::new(CancellationToken::new()),
        });
        let accept = tokio::spawn(accept_loop(listener, Arc::clone(&state)));
        DbProxy { addr, state, accept }
    }

    /// Starts a proxy to the server of `database_url` and answers it with the URL that goes
    /// through it (same database, user and options).
    pub fn in_front_of(database_url: &str) -> (Self, String) {
        let options: sqlx::postgres::PgConnectOptions = database_url.parse().expect("a database URL");
        let host = match options.get_host() {
            "localhost" => "127.0.0.1",
            host => host,
        };
        let upstream: SocketAddr = format!("{host}:{}", options.get_port())
            .parse()
            .expect("the test server is reached by IP address");
        let proxy = DbProxy::start(upstream);
        let url = database_url.replacen(&authority(database_url), &proxy.addr.to_string(), 1);
        (proxy, url)
    }

    /// The blip: drops every connection (both sides: the server ends those sessions and rolls
    /// their transactions back) and refuses new ones until [`DbProxy::restore`].
    pub fn cut(&self) {
        let mut connections = self.state.connections.lock().unwrap();
        self.state.open.store(false, Ordering::SeqCst);
        connections.cancel();
        *connections = CancellationToken::new();
    }

    /// Lets connections through again.
    pub fn restore(&self) {
        self.state.open.store(true, Ordering::SeqCst);
    }

    /// What an HA proxy does on a failover: drops every connection and sends new ones to
    /// `upstream` (the promoted node).
    pub fn switch_to(&self, upstream: SocketAddr) {
        *self.state.upstream.lock().unwrap() = upstream;
        self.cut();
        self.restore();
    }
}

impl Drop for DbProxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.state.connections.lock().unwrap().cancel();
    }
}

/// `host:port` of a URL `scheme://[user[:password]@]host:port/...`.
fn authority(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let rest = rest.split(['/', '?']).next().unwrap_or(rest);
    rest.rsplit_once('@').map_or(rest, |(_, host)| host).to_owned()
}

async fn accept_loop(listener: TcpListener, state: Arc<State>) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            continue;
        };
        // Under the lock [`DbProxy::cut`] takes: a connection is either refused or cut with the rest.
        let cut = {
            let connections = state.connections.lock().unwrap();
            let upstream = *state.upstream.lock().unwrap();
            state
                .open
                .load(Ordering::SeqCst)
                .then(|| (connections.clone(), upstream))
        };
        match cut {
            Some((cut, upstream)) => drop(tokio::spawn(forward(client, upstream, cut))),
            None => drop(client),
        }
    }
}

/// Copies both ways until either side closes or the proxy is cut; then drops both sockets.
async fn forward(mut client: TcpStream, upstream: SocketAddr, cut: CancellationToken) {
    let Ok(mut server) = TcpStream::connect(upstream).await else {
        return;
    };
    tokio::select! {
        () = cut.cancelled() => {}
        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
    }
}

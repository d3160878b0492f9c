//! Building and running the application: the database, the HTTP server, the scheduler.
//!
//! `Application::build` does everything that can fail at start-up (connect, migrate, bind) and
//! returns a value whose port is known, so tests bind port 0 and read it back.

use std::future::Future;
use std::sync::Arc;

use sqlx::PgPool;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::config::{ApiTokens, Settings};
use crate::store;

/// What every handler can reach. Cheap to clone.
#[derive(Clone)]
pub struct AppState {
    pub pool: PgPool,
    pub settings: Arc<Settings>,
    pub tokens: Arc<ApiTokens>,
    pub redis: Option<deadpool_redis::Pool>,
}

pub struct Application {
    listener: TcpListener,
    state: AppState,
}

impl Application {
    /// Connects to the database (creating it when missing), runs the migrations and binds the
    /// HTTP port.
    pub async fn build(settings: Settings) -> anyhow::Result<Self> {
        let pool = store::database::connect(&settings.database_url, settings.db_max_connections).await?;
        store::database::migrate(&pool).await?;
        let redis = settings.redis_url.as_deref().map(store::redis::pool).transpose()?;
        let listener = TcpListener::bind(settings.http_addr).await?;
        let state = AppState {
            pool,
            tokens: Arc::new(settings.api_tokens.clone()),
            settings: Arc::new(settings),
            redis,
        };
        Ok(Application { listener, state })
    }

    pub fn port(&self) -> u16 {
        self.listener.local_addr().map(|a| a.port()).unwrap_or_default()
    }

    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// Serves until `shutdown` completes, then stops accepting requests, lets the requests in
    /// flight finish, and returns.
    pub async fn run_until_stopped(self, shutdown: impl Future<Output = ()> + Send + 'static) -> anyhow::Result<()> {
        let stop = CancellationToken::new();
        let router = crate::http::router(self.state.clone(), self.state.settings.request_timeout);
        tracing::info!(
            http.addr = %self.listener.local_addr()?,
            instance.id = %self.state.settings.instance_id,
            "serving"
        );
        let server_stop = stop.clone();
        let server =
            axum::serve(self.listener, router).with_graceful_shutdown(async move { server_stop.cancelled().await });
        let signal = async move {
            shutdown.await;
            tracing::info!("shutting down: no new requests or fires");
            stop.cancel();
        };
        let (served, ()) = tokio::join!(server.into_future(), signal);
        served?;
        self.state.pool.close().await;
        Ok(())
    }
}

/// Completes on SIGTERM or Ctrl-C.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
}

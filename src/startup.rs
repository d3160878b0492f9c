//! Building and running the application: the database, the HTTP server, the scheduler.
//!
//! `Application::build` does everything that can fail at start-up (connect, migrate, bind) and
//! returns a value whose port is known, so tests bind port 0 and read it back.

use std::future::Future;
use std::sync::Arc;

use sqlx::PgPool;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::alerts::{self, AlertWorkerConfig};
use crate::audit::{self, AuditConfig};
use crate::clock::{Clock, DatabaseTime};
use crate::config::Settings;
use crate::failover::{self, FailoverRules, FailoverWatch};
use crate::jobs::scheduler::Scheduler;
use crate::jobs::{Hooks, SettleJob, Walked};
use crate::lock::JobLock;
use crate::reminders::{self, ReminderWorkerConfig};
use crate::state::{AppState, AppStateParts};
use crate::{store, telemetry};

/// What the job runs after each walk, for `serve` and the CLI alike: the audit of the months
/// the walk made final.
pub fn job_hooks(pool: &PgPool, settings: &Settings) -> Hooks {
    audit_after_walk(Hooks::default(), pool, settings)
}

fn audit_after_walk(hooks: Hooks, pool: &PgPool, settings: &Settings) -> Hooks {
    let pool = pool.clone();
    let config = AuditConfig::from_settings(settings);
    hooks.after_walk(move |walked: Walked| {
        let (pool, config) = (pool.clone(), config.clone());
        async move { audit::audit_finalised_months(&pool, &config, &walked.settled, &walked.shutdown).await }
    })
}

/// The hooks that let `watch` remember what this replica saw acknowledged: each token granted,
/// each date settled (before the audit, which may take a while).
fn remembered_by(watch: &FailoverWatch) -> Hooks {
    let granted = watch.clone();
    let settled = watch.clone();
    Hooks::default()
        .on_granted(move |token| granted.granted(token))
        .after_walk(move |walked: Walked| {
            for date in &walked.settled {
                settled.settled(*date);
            }
            std::future::ready(())
        })
}

pub struct Application {
    listener: TcpListener,
    state: AppState,
    alerts: AlertWorkerConfig,
    failover: FailoverRules,
}

impl Application {
    /// Connects to the database (creating it when missing), runs the migrations and binds the
    /// HTTP port.
    pub async fn build(settings: Settings) -> anyhow::Result<Self> {
        Self::build_with_clock(settings, Clock::system()).await
    }

    /// [`Application::build`] with this replica's wall clock read from `clock`: tests give each
    /// replica a shifted or jumping clock.
    pub async fn build_with_clock(settings: Settings, clock: Clock) -> anyhow::Result<Self> {
        let watch = FailoverWatch::default();
        let observer: store::database::ConnectObserver = {
            let watch = watch.clone();
            Arc::new(move |identity| watch.connected(identity))
        };
        let pool = store::database::connect_observed(
            &settings.database_url,
            &settings.db_schema,
            settings.db_max_connections,
            Some(observer),
        )
        .await?;
        store::database::migrate(&pool).await?;
        let failover = FailoverRules::from_settings(&settings);
        // The first check only remembers the identity a promotion will be compared with.
        if let Err(error) = failover::check(&pool, &watch, &failover).await {
            tracing::warn!(
                error = format!("{error:#}"),
                "could not read the database identity; the next check will"
            );
        }
        failover::warn_without_synchronous_standby(&pool).await;
        let redis = settings.redis_url.as_deref().map(store::redis::pool).transpose()?;
        let listener = TcpListener::bind(settings.http_addr).await?;
        let lock = JobLock::from_settings(pool.clone(), redis.clone(), &settings)?;
        // Validated now, so that a bad cron or webhook URL stops the process at start.
        let time = DatabaseTime::new(clock, pool.clone());
        let hooks = audit_after_walk(remembered_by(&watch), &pool, &settings);
        let job = SettleJob::new(pool.clone(), lock, time, &settings, hooks)?;
        let alerts = AlertWorkerConfig::for_settlement(job.schedule(), &settings)?;
        let state = AppState::new(AppStateParts {
            reads: store::reads::ReadConnections::new(pool.clone(), settings.db_max_connections),
            pool,
            tokens: Arc::new(settings.api_tokens.clone()),
            settings: Arc::new(settings),
            redis,
            job,
            failover: watch,
        });
        Ok(Application {
            listener,
            state,
            alerts,
            failover,
        })
    }

    pub fn port(&self) -> u16 {
        self.listener.local_addr().map(|a| a.port()).unwrap_or_default()
    }

    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// Serves (and, unless disabled, runs the scheduler) until `shutdown` completes. Then, in
    /// order: no new fires; the running fire (cron, start-up or manual) finishes its date within
    /// the grace period, or abandons it, and releases its lock; the server stops accepting
    /// requests and lets those in flight finish.
    pub async fn run_until_stopped(self, shutdown: impl Future<Output = ()> + Send + 'static) -> anyhow::Result<()> {
        let stop = CancellationToken::new();
        let settings = Arc::clone(&self.state.settings);
        let pool = self.state.pool.clone();
        let mut workers = vec![telemetry::spawn_clock_skew_probe(
            self.state.job.database_time().clone(),
            settings.instance_id.clone(),
            stop.clone(),
        )];
        let scheduler = if settings.scheduler_enabled {
            workers.push(tokio::spawn(alerts::run_alert_worker(
                pool.clone(),
                self.alerts,
                stop.clone(),
            )));
            workers.push(tokio::spawn(failover::run_failover_watch(
                pool.clone(),
                self.state.failover.clone(),
                self.failover,
                stop.clone(),
            )));
            if let Some(redis) = self.state.redis.clone() {
                let config = ReminderWorkerConfig::from_settings(&settings);
                workers.push(tokio::spawn(reminders::run_reminder_worker(
                    pool.clone(),
                    redis,
                    config,
                    stop.clone(),
                )));
            }
            Some(Scheduler::start(self.state.job.clone(), stop.child_token()).await?)
        } else {
            None
        };
        let router = crate::http::router(self.state.clone(), settings.request_timeout);
        tracing::info!(
            http.addr = %self.listener.local_addr()?,
            instance.id = %self.state.settings.instance_id,
            "serving"
        );
        let limits = crate::http::server::ConnectionLimits {
            header_read_timeout: settings.header_read_timeout,
            max_connections: settings.max_http_connections,
        };
        let server = crate::http::server::serve(self.listener, router, limits, stop.clone());
        let job = self.state.job.clone();
        let signal = async move {
            shutdown.await;
            tracing::info!("shutting down: no new fires");
            // Together: the job refuses new fires at once and bounds the running one (whatever
            // started it) by the grace period, while the ticker stops and waits for its fire
            // tasks, which end with that run. Stopping the ticker first would wait for a
            // cron-fired walk to run to its end.
            let scheduler = async {
                if let Some(scheduler) = scheduler {
                    scheduler.stop().await;
                }
            };
            tokio::join!(job.shutdown(settings.shutdown_grace), scheduler);
            tracing::info!("shutting down: no new requests");
            stop.cancel();
        };
        tokio::join!(server, signal);
        for worker in workers {
            let _ = worker.await;
        }
        self.state.reads.close().await;
        pool.close().await;
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

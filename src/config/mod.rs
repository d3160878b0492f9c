//! Configuration, read from the environment only (twelve-factor), typed and validated at start-up.
//!
//! Every variable the service reads is listed in [`Settings::from_env`], with its default and the
//! values it accepts. A bad value stops the process with a message that names the variable and
//! what it accepts; nothing is re-read later.

mod env;
mod tokens;

use std::net::SocketAddr;
use std::time::Duration;

use chrono::NaiveDate;
use chrono_tz::Tz;

pub use env::ConfigError;
pub use tokens::{ApiTokens, Role};

use env::Env;

use crate::store::session::{Schema, StatementLimits};

/// The default database: the local PostgreSQL of a developer machine. Created when missing.
pub const DEFAULT_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/finesettle";

/// The variable naming this replica ([`Settings::instance_id`]). Telemetry reads it too, before the
/// settings exist, to name the replica in `service.instance.id` alike.
pub const INSTANCE_ID_VAR: &str = "FINESETTLE_INSTANCE_ID";

/// Which store holds the job lock. Fencing is enforced by PostgreSQL either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockBackend {
    Postgres,
    Redis,
}

/// Everything the service needs to know about its environment.
#[derive(Debug, Clone)]
pub struct Settings {
    pub database_url: String,
    pub redis_url: Option<String>,
    pub http_addr: SocketAddr,
    /// Who this replica is, for people reading locks, executions and attempts.
    pub instance_id: String,
    pub business_tz: Tz,
    pub daily_fine_cents: i64,
    pub job: JobSettings,
    pub api_tokens: ApiTokens,
    pub alert_webhook: Option<String>,
    /// How far a replica's clock may be from the database's before a CLOCK_SKEW alert.
    pub max_clock_skew: Duration,
    /// Whether `serve` runs the scheduler (cron fires, catch-up at start, alerts). Tests that drive
    /// the job directly turn it off.
    pub scheduler_enabled: bool,
    /// Upper bound on the time one HTTP request may take before it is answered 408.
    pub request_timeout: Duration,
    /// How long a connection may take to send a request's headers (and how long a kept-alive
    /// connection may sit idle) before it is closed: a client that trickles its headers, or
    /// sends none, holds a connection for this long at most.
    pub header_read_timeout: Duration,
    /// Connections served at once; more wait in the listen backlog. Bounds the file descriptors
    /// and memory a crowd of slow or idle clients can take.
    pub max_http_connections: usize,
    /// On SIGTERM, how long a running settlement may take to finish its current date before it
    /// abandons it (rolled back, recorded FAILED, redone by the next fire).
    pub shutdown_grace: Duration,
    pub db_max_connections: u32,
    /// The schema holding the service's tables (`search_path` of every connection, where the
    /// migrations create them).
    pub db_schema: Schema,
}

/// The nightly settlement job (`settle-fines`).
#[derive(Debug, Clone)]
pub struct JobSettings {
    pub settle_cron: String,
    pub lock_at_most_for: Duration,
    pub lock_at_least_for: Duration,
    pub lock_backend: LockBackend,
    pub backfill_max_days: u32,
    pub settle_start_date: Option<NaiveDate>,
    pub job_timeout: Duration,
    pub missed_grace: Duration,
    /// Rows per statement in the accrue and settle steps.
    pub batch_size: i64,
    /// The limits of each statement of a date's transaction, whatever the database's defaults.
    pub statement_limits: StatementLimits,
}

impl Settings {
    /// Reads and validates every variable. The names are the contract of docs/CONTRACT.md §5.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Same as [`Settings::from_env`] over any source of variables (tests pass a map).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let env = Env::new(lookup);
        let job = JobSettings {
            settle_cron: env.string("FINESETTLE_SETTLE_CRON", "0 0 2 * * *"),
            lock_at_most_for: env.duration("FINESETTLE_LOCK_AT_MOST_FOR", "15m")?,
            lock_at_least_for: env.duration("FINESETTLE_LOCK_AT_LEAST_FOR", "1m")?,
            lock_backend: env.parse_with(
                "FINESETTLE_LOCK_BACKEND",
                "postgres",
                "postgres or redis",
                |v| match v {
                    "postgres" => Some(LockBackend::Postgres),
                    "redis" => Some(LockBackend::Redis),
                    _ => None,
                },
            )?,
            backfill_max_days: env.ranged("FINESETTLE_BACKFILL_MAX_DAYS", 62, 1, 3660)?,
            settle_start_date: env.optional_date("FINESETTLE_SETTLE_START_DATE")?,
            job_timeout: env.duration("FINESETTLE_JOB_TIMEOUT", "30m")?,
            missed_grace: env.duration("FINESETTLE_MISSED_GRACE", "60m")?,
            batch_size: env.ranged("FINESETTLE_SETTLE_BATCH_SIZE", 20_000, 100, 1_000_000)?,
            statement_limits: StatementLimits {
                statement_timeout: env.duration("FINESETTLE_JOB_STATEMENT_TIMEOUT", "10m")?,
                lock_timeout: env.duration("FINESETTLE_JOB_LOCK_TIMEOUT", "1m")?,
            },
        };
        if job.lock_at_least_for > job.lock_at_most_for {
            return Err(ConfigError::new(
                "FINESETTLE_LOCK_AT_LEAST_FOR",
                format!("{:?}", job.lock_at_least_for),
                "a duration no longer than FINESETTLE_LOCK_AT_MOST_FOR",
            ));
        }
        if job.lock_at_most_for < Duration::from_secs(3) {
            return Err(ConfigError::new(
                "FINESETTLE_LOCK_AT_MOST_FOR",
                format!("{:?}", job.lock_at_most_for),
                "a duration of at least 3s (the lease is renewed every third of it)",
            ));
        }
        let redis_url = env.optional_string("REDIS_URL");
        if job.lock_backend == LockBackend::Redis && redis_url.is_none() {
            return Err(ConfigError::new(
                "FINESETTLE_LOCK_BACKEND",
                "redis".to_owned(),
                "postgres, or redis together with REDIS_URL",
            ));
        }
        Ok(Settings {
            database_url: env.string("DATABASE_URL", DEFAULT_DATABASE_URL),
            redis_url,
            http_addr: env.parse("FINESETTLE_HTTP_ADDR", "0.0.0.0:8080", "an address such as 0.0.0.0:8080")?,
            instance_id: env
                .optional_string(INSTANCE_ID_VAR)
                .unwrap_or_else(default_instance_id),
            business_tz: env.parse("FINESETTLE_BUSINESS_TZ", "Asia/Shanghai", "an IANA time zone such as Asia/Shanghai")?,
            daily_fine_cents: env.ranged("FINESETTLE_DAILY_FINE_CENTS", 50, 0, crate::domain::MAX_DAILY_FINE_CENTS)?,
            job,
            api_tokens: env.parse_with(
                "FINESETTLE_API_TOKENS",
                "",
                "role=token pairs separated by commas, roles admin, librarian or reader, tokens of 16 to 256 visible characters",
                |v| ApiTokens::parse(v).ok(),
            )?,
            alert_webhook: env.optional_string("FINESETTLE_ALERT_WEBHOOK"),
            max_clock_skew: env.positive_duration("FINESETTLE_MAX_CLOCK_SKEW", "5s")?,
            scheduler_enabled: env.parse("FINESETTLE_SCHEDULER_ENABLED", "true", "true or false")?,
            request_timeout: env.duration("FINESETTLE_REQUEST_TIMEOUT", "30s")?,
            header_read_timeout: env.duration("FINESETTLE_HEADER_READ_TIMEOUT", "10s")?,
            max_http_connections: env.ranged("FINESETTLE_MAX_HTTP_CONNECTIONS", 512, 1, 100_000)?,
            shutdown_grace: env.duration("FINESETTLE_SHUTDOWN_GRACE", "30s")?,
            db_max_connections: env.ranged("FINESETTLE_DB_MAX_CONNECTIONS", 16, 2, 1000)?,
            db_schema: env.parse_with(
                "FINESETTLE_DB_SCHEMA",
                "public",
                "a schema name of lower-case letters, digits and _, not starting with a digit or pg_",
                Schema::parse,
            )?,
        })
    }
}

/// Who this replica is when [`INSTANCE_ID_VAR`] is unset: host name plus process id, unique among
/// replicas on one host, readable in an operator's view.
pub fn default_instance_id() -> String {
    let host = gethostname::gethostname().to_string_lossy().into_owned();
    format!("{host}-{}", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn settings(vars: &[(&str, &str)]) -> Result<Settings, ConfigError> {
        let map: HashMap<String, String> = vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        Settings::from_lookup(|name| map.get(name).cloned())
    }

    #[test]
    fn defaults_follow_the_spec() {
        let s = settings(&[]).unwrap();
        assert_eq!(s.database_url, DEFAULT_DATABASE_URL);
        assert_eq!(s.http_addr.to_string(), "0.0.0.0:8080");
        assert_eq!(s.business_tz, chrono_tz::Asia::Shanghai);
        assert_eq!(s.daily_fine_cents, 50);
        assert_eq!(s.job.settle_cron, "0 0 2 * * *");
        assert_eq!(s.job.lock_at_most_for, Duration::from_secs(15 * 60));
        assert_eq!(s.job.lock_at_least_for, Duration::from_secs(60));
        assert_eq!(s.job.backfill_max_days, 62);
        assert_eq!(s.job.job_timeout, Duration::from_secs(30 * 60));
        assert_eq!(s.job.missed_grace, Duration::from_secs(60 * 60));
        assert_eq!(s.job.lock_backend, LockBackend::Postgres);
        assert_eq!(s.max_clock_skew, Duration::from_secs(5));
        assert!(s.api_tokens.is_empty());
        assert_eq!(s.db_schema.as_str(), "public");
        assert_eq!(s.job.statement_limits.statement_timeout, Duration::from_secs(600));
        assert_eq!(s.job.statement_limits.lock_timeout, Duration::from_secs(60));
    }

    #[test]
    fn the_schema_is_a_plain_identifier() {
        let s = settings(&[("FINESETTLE_DB_SCHEMA", "library")]).unwrap();
        assert_eq!(s.db_schema.as_str(), "library");
        let err = settings(&[("FINESETTLE_DB_SCHEMA", "Library; drop")]).unwrap_err();
        assert!(err.to_string().contains("FINESETTLE_DB_SCHEMA"), "{err}");
    }

    #[test]
    fn the_clock_skew_limit_is_a_duration_above_zero() {
        let s = settings(&[("FINESETTLE_MAX_CLOCK_SKEW", "1m 30s")]).unwrap();
        assert_eq!(s.max_clock_skew, Duration::from_secs(90));
        assert_eq!(
            settings(&[("FINESETTLE_MAX_CLOCK_SKEW", "250ms")])
                .unwrap()
                .max_clock_skew,
            Duration::from_millis(250)
        );
        for bad in ["0s", "5", "soon"] {
            let err = settings(&[("FINESETTLE_MAX_CLOCK_SKEW", bad)]).unwrap_err().to_string();
            assert!(
                err.contains("FINESETTLE_MAX_CLOCK_SKEW") && err.contains("above zero"),
                "{err}"
            );
        }
    }

    #[test]
    fn a_bad_value_names_the_variable_and_what_it_accepts() {
        let err = settings(&[("FINESETTLE_LOCK_AT_MOST_FOR", "soon")]).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("FINESETTLE_LOCK_AT_MOST_FOR"), "{text}");
        assert!(text.contains("duration"), "{text}");

        let err = settings(&[("FINESETTLE_BUSINESS_TZ", "Mars/Olympus")]).unwrap_err();
        assert!(err.to_string().contains("FINESETTLE_BUSINESS_TZ"));

        let err = settings(&[("FINESETTLE_BACKFILL_MAX_DAYS", "0")]).unwrap_err();
        assert!(err.to_string().contains("between 1 and 3660"), "{err}");

        let err = settings(&[("FINESETTLE_SETTLE_START_DATE", "2026-13-01")]).unwrap_err();
        assert!(err.to_string().contains("YYYY-MM-DD"), "{err}");
    }

    #[test]
    fn durations_accept_the_spec_forms() {
        let s = settings(&[
            ("FINESETTLE_LOCK_AT_MOST_FOR", "90s"),
            ("FINESETTLE_LOCK_AT_LEAST_FOR", "1m 10s"),
        ])
        .unwrap();
        assert_eq!(s.job.lock_at_most_for, Duration::from_secs(90));
        assert_eq!(s.job.lock_at_least_for, Duration::from_secs(70));
    }

    #[test]
    fn at_least_may_not_exceed_at_most() {
        let err = settings(&[
            ("FINESETTLE_LOCK_AT_MOST_FOR", "10s"),
            ("FINESETTLE_LOCK_AT_LEAST_FOR", "1m"),
        ])
        .unwrap_err();
        assert!(err.to_string().contains("FINESETTLE_LOCK_AT_LEAST_FOR"));
    }

    #[test]
    fn redis_backend_needs_redis_url() {
        assert!(settings(&[("FINESETTLE_LOCK_BACKEND", "redis")]).is_err());
        assert!(settings(&[("FINESETTLE_LOCK_BACKEND", "redis"), ("REDIS_URL", "redis://127.0.0.1")]).is_ok());
        assert!(settings(&[("FINESETTLE_LOCK_BACKEND", "etcd")]).is_err());
    }
}

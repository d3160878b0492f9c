//! Arranging execution records, the rules under test, and a local webhook receiver.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::{HeaderMap, StatusCode};
use chrono::NaiveDate;
use finesettle::alerts::conditions::ClockSkewLimits;
use finesettle::alerts::{
    AlertRules, CLOCK_MEASUREMENT_STALE_AFTER, DEFAULT_MAX_MISSED_PER_EVALUATION, DeliveryPolicy, EvaluationReport,
    SETTLE_FINES, Webhook, evaluate_at,
};
use finesettle::schedule::CronSchedule;
use serde_json::Value;
use sqlx::PgPool;

// The fixtures' parsers of dates and instants, which the alert tests name as theirs.
use crate::common::data;
pub use crate::common::fixtures::{date, instant};

/// `settle-fines` at 02:00 UTC (so slots are easy to read), 30m timeout, 60m grace, clocks within
/// 5 s, measurements stale after three minutes.
pub fn rules(webhook_enabled: bool) -> AlertRules {
    AlertRules {
        task_name: SETTLE_FINES,
        schedule: CronSchedule::parse("0 0 2 * * *", chrono_tz::UTC).expect("valid cron"),
        job_timeout: Duration::from_secs(30 * 60),
        missed_grace: Duration::from_secs(60 * 60),
        settle_start_date: None,
        max_missed_per_evaluation: DEFAULT_MAX_MISSED_PER_EVALUATION,
        clock_skew: ClockSkewLimits {
            max_skew: Duration::from_secs(5),
            stale_after: CLOCK_MEASUREMENT_STALE_AFTER,
        },
        webhook_enabled,
    }
}

/// [`rules`] without the webhook, with the job's start date set to `start_date`.
pub fn rules_from(start_date: &str) -> AlertRules {
    let mut rules = rules(false);
    rules.settle_start_date = Some(date(start_date));
    rules
}

/// Asserts that `report` resolved exactly the alert `alert_id` and raised nothing.
#[track_caller]
pub fn assert_resolved_only(report: &EvaluationReport, alert_id: i64) {
    assert_eq!(report.resolved.len(), 1, "{report:?}");
    assert_eq!(report.resolved[0].id, alert_id);
    assert!(report.raised.is_empty(), "{report:?}");
}

/// Evaluates `rules` at the RFC 3339 instant `at`, which must succeed.
pub async fn evaluate(pool: &PgPool, rules: &AlertRules, at: &str) -> EvaluationReport {
    evaluate_at(pool, rules, instant(at)).await.unwrap()
}

/// An execution of `settle-fines` for `business_date` that started `started_ago` (an SQL
/// interval) before the database's `now()`; finished now unless RUNNING.
pub async fn execution(pool: &PgPool, business_date: &str, status: &str, started_ago: &str) -> i64 {
    sqlx::query_scalar(
        "insert into task_execution
             (task_name, business_date, trigger, instance_id, fencing_token, started_at, finished_at, status, error)
         values ('settle-fines', $1::date, 'cron', 'test-replica', 1, now() - $2::interval,
                 case when $3 = 'RUNNING' then null else now() end, $3,
                 case when $3 = 'FAILED' then 'lock lost: fencing token 1 is stale' end)
         returning id",
    )
    .bind(business_date)
    .bind(started_ago)
    .bind(status)
    .fetch_one(pool)
    .await
    .expect("insert an execution")
}

/// A SUCCESS of `settle-fines` for every date from `first` through `last`, as if each had been
/// settled a minute ago.
pub async fn successes(pool: &PgPool, first: &str, last: &str) {
    sqlx::query(
        "insert into task_execution
             (task_name, business_date, trigger, instance_id, fencing_token, started_at, finished_at, status)
         select 'settle-fines', d::date, 'cron', 'test-replica', 1, now() - interval '1 minute', now(), 'SUCCESS'
         from generate_series($1::date::timestamp, $2::date::timestamp, interval '1 day') as d",
    )
    .bind(first)
    .bind(last)
    .execute(pool)
    .await
    .expect("insert successes");
}

/// Ends a RUNNING execution with `status`.
pub async fn finish(pool: &PgPool, execution_id: i64, status: &str) {
    sqlx::query(
        "update task_execution
         set status = $2, finished_at = now(), error = case when $2 = 'FAILED' then 'gave up' end
         where id = $1 and status = 'RUNNING'",
    )
    .bind(execution_id)
    .bind(status)
    .execute(pool)
    .await
    .expect("finish an execution");
}

/// As if the job had first been deployed at `first_seen_at`.
pub async fn registered_at(pool: &PgPool, first_seen_at: &str) {
    sqlx::query(
        "insert into job_registration (task_name, first_seen_at) values ('settle-fines', $1::timestamptz)
         on conflict (task_name) do update set first_seen_at = excluded.first_seen_at",
    )
    .bind(first_seen_at)
    .execute(pool)
    .await
    .expect("register the job");
}

/// The start date the job's first plan records (`FINESETTLE_SETTLE_START_DATE` unset).
pub async fn recorded_start(pool: &PgPool, start_date: &str) {
    finesettle::store::start_date::record_first(pool, &SETTLE_FINES, date(start_date))
        .await
        .expect("record the start date");
}

/// The business dates of the MISSED alerts in `state`, oldest first.
pub async fn missed_dates(pool: &PgPool, state: &str) -> Vec<NaiveDate> {
    sqlx::query_scalar("select business_date from alert where kind = 'MISSED' and state = $1 order by business_date")
        .bind(state)
        .fetch_all(pool)
        .await
        .expect("read MISSED alerts")
}

/// Every date from `first` through `last` (`YYYY-MM-DD`).
pub fn days(first: &str, last: &str) -> Vec<NaiveDate> {
    data::days(date(first), date(last))
}

/// `(kind, business_date, state)` of every alert, oldest first.
pub async fn alerts(pool: &PgPool) -> Vec<(String, NaiveDate, String)> {
    sqlx::query_as("select kind, business_date, state from alert order by id")
        .fetch_all(pool)
        .await
        .expect("read alerts")
}

pub async fn count(pool: &PgPool, sql: &'static str) -> i64 {
    sqlx::query_scalar(sql).fetch_one(pool).await.expect("count")
}

/// Another connection pool on the same database: another replica, as far as alerts care.
pub async fn replica_pool(url: &str) -> PgPool {
    PgPool::connect(url).await.expect("connect a replica")
}

/// A delivery policy whose retries wait long enough that a test must make them due itself.
pub fn slow_retry_policy() -> DeliveryPolicy {
    DeliveryPolicy {
        backoff: finesettle::backoff::Backoff::new(Duration::from_secs(600), Duration::from_secs(30 * 60)),
        ..DeliveryPolicy::default()
    }
}

/// One POST the receiver saw.
#[derive(Debug, Clone)]
pub struct Received {
    pub status: u16,
    pub idempotency_key: String,
    pub body: Value,
}

/// A webhook receiver on 127.0.0.1, answering 500 to its first `fail_first` requests.
#[derive(Clone)]
pub struct Receiver {
    pub port: u16,
    fail_first: Arc<AtomicUsize>,
    seen: Arc<Mutex<Vec<Received>>>,
}

impl Receiver {
    pub async fn start(fail_first: usize) -> Self {
        let receiver = Receiver {
            port: 0,
            fail_first: Arc::new(AtomicUsize::new(fail_first)),
            seen: Arc::new(Mutex::new(Vec::new())),
        };
        let state = receiver.clone();
        let app = axum::Router::new().route(
            "/hooks/finesettle",
            axum::routing::post(move |headers: HeaderMap, body: axum::body::Bytes| {
                let state = state.clone();
                async move { state.record(&headers, &body) }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the receiver");
        let port = listener.local_addr().expect("receiver address").port();
        tokio::spawn(async move { axum::serve(listener, app).await });
        Receiver { port, ..receiver }
    }

    fn record(&self, headers: &HeaderMap, body: &[u8]) -> StatusCode {
        let failing = self
            .fail_first
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        let status = if failing {
            StatusCode::INTERNAL_SERVER_ERROR
        } else {
            StatusCode::NO_CONTENT
        };
        self.seen.lock().unwrap().push(Received {
            status: status.as_u16(),
            idempotency_key: headers
                .get("idempotency-key")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned(),
            body: serde_json::from_slice(body).unwrap_or(Value::Null),
        });
        status
    }

    /// The receiver's URL, with credentials in it that must never be logged.
    pub fn url(&self) -> String {
        format!(
            "http://hook-user:hook-s3cret@127.0.0.1:{}/hooks/finesettle?token=t0ken",
            self.port
        )
    }

    pub fn webhook(&self) -> Webhook {
        Webhook::new(&self.url(), Duration::from_secs(10)).expect("a valid webhook URL")
    }

    pub fn received(&self) -> Vec<Received> {
        self.seen.lock().unwrap().clone()
    }

    /// The POSTs it accepted.
    pub fn accepted(&self) -> Vec<Received> {
        self.received().into_iter().filter(|r| r.status < 300).collect()
    }
}

//! An app with Redis, the service's queue on the test's own Redis database, and helpers that
//! drive the consumer at explicit instants.

use std::time::Duration;

use chrono::{DateTime, NaiveDate, TimeDelta, Utc};
use chrono_tz::Tz;
use finesettle::reminders::consumer::{self, ConsumeReport, ConsumerConfig};
use finesettle::reminders::timing::{self, moment};
use finesettle::reminders::{ReminderKind, ReminderQueue};
use sqlx::PgPool;

use crate::common::redis::TestRedis;
use crate::common::{TestApp, fixtures, spawn_app_with_redis};

/// A visibility deadline short enough to read easily in the tests' explicit timelines.
pub const VISIBILITY: Duration = Duration::from_secs(30);

pub fn consumer_config(tz: Tz, batch_size: usize) -> ConsumerConfig {
    ConsumerConfig {
        batch_size,
        visibility: VISIBILITY,
        business_tz: tz,
    }
}

/// A running app whose `REDIS_URL` is a Redis database of this test's own, and the queue the
/// app schedules into (the service's key prefix, on that database).
pub struct Harness {
    pub app: TestApp,
    pub redis: TestRedis,
    pub queue: ReminderQueue,
    pub config: ConsumerConfig,
    pub member_id: i64,
}

pub async fn harness() -> Harness {
    let (app, redis) = spawn_app_with_redis(|_| {}).await;
    let queue = ReminderQueue::new(redis.pool());
    let config = consumer_config(app.settings.business_tz, 100);
    let member_id = app.create_member("Ada", "ada@example.org").await["id"]
        .as_i64()
        .unwrap();
    Harness {
        app,
        redis,
        queue,
        config,
        member_id,
    }
}

/// A [`harness`] whose member has one loan due in `days` days: (harness, due date, loan id).
pub async fn harness_with_loan(days: i64) -> (Harness, NaiveDate, i64) {
    let h = harness().await;
    let due_on = h.in_days(days).await;
    let loan = h.lend(due_on).await;
    (h, due_on, loan)
}

impl Harness {
    /// Takes the reminders due at `now` as one consumer would (they stay in flight).
    pub async fn take(&self, now: DateTime<Utc>) -> Vec<finesettle::reminders::queue::Taken> {
        consumer::take(&self.queue, &self.config, now).await.unwrap()
    }

    /// [`Harness::take`], asserting that exactly one reminder was due.
    pub async fn take_one(&self, now: DateTime<Utc>) -> Vec<finesettle::reminders::queue::Taken> {
        let taken = self.take(now).await;
        assert_eq!(taken.len(), 1, "one reminder due at {now}");
        taken
    }

    /// How many reminders the reconciler restored at `now`.
    pub async fn reconcile(&self, now: DateTime<Utc>) -> u64 {
        let report = finesettle::reminders::reconcile(self.pool(), &self.queue, now, self.tz()).await;
        report.unwrap().restored
    }

    pub fn pool(&self) -> &PgPool {
        &self.app.pool
    }

    pub fn tz(&self) -> Tz {
        self.config.business_tz
    }

    /// Lends a new book to the member through the API (which schedules its reminders), from
    /// today until `due_on`; returns the loan id.
    pub async fn lend(&self, due_on: NaiveDate) -> i64 {
        let book = self.app.create_book("Dune").await["id"].as_i64().unwrap();
        self.app.create_loan(self.member_id, book, due_on).await["id"]
            .as_i64()
            .unwrap()
    }

    /// Lends a new book through the API from `borrowed_on` (in the past: an import).
    pub async fn lend_from(&self, borrowed_on: NaiveDate, due_on: NaiveDate) -> i64 {
        let book = self.app.create_book("Dune").await["id"].as_i64().unwrap();
        self.app
            .create_loan_from(self.member_id, book, borrowed_on, due_on)
            .await["id"]
            .as_i64()
            .unwrap()
    }

    /// Inserts an open loan with plain SQL: a loan Redis never heard of.
    pub async fn insert_loan(&self, due_on: NaiveDate) -> i64 {
        let book = fixtures::insert_book(self.pool(), "Dune").await;
        let today = self.app.today().await;
        fixtures::insert_loan(self.pool(), self.member_id, book, today.min(due_on), due_on).await
    }

    /// A date `days` after today's business date.
    pub async fn in_days(&self, days: i64) -> NaiveDate {
        self.app.today().await + TimeDelta::days(days)
    }

    /// `kind`'s moment for a loan due on `due_on`, plus `after`.
    pub fn at(&self, kind: ReminderKind, due_on: NaiveDate, after: TimeDelta) -> DateTime<Utc> {
        moment(kind, due_on, self.tz()).expect("a moment") + after
    }

    /// Queues both reminders of a loan as of `now`, as loan creation does.
    pub async fn schedule(&self, loan_id: i64, due_on: NaiveDate, now: DateTime<Utc>) -> u64 {
        self.queue
            .schedule(&timing::for_loan(
                finesettle::domain::LoanId(loan_id),
                due_on,
                now,
                self.tz(),
            ))
            .await
            .unwrap()
    }

    /// Consumes at `now` until nothing due is left; the reports summed.
    pub async fn drain(&self, now: DateTime<Utc>) -> ConsumeReport {
        drain(self.pool(), &self.queue, &self.config, now).await
    }

    /// `(loan_id, kind)` of every notification, in that order.
    pub async fn notifications(&self) -> Vec<(i64, String)> {
        sqlx::query_as("select loan_id, kind from notification order by loan_id, kind")
            .fetch_all(self.pool())
            .await
            .unwrap()
    }

    /// The members of a sorted set with their scores, lowest first.
    pub async fn members(&self, key: &str) -> Vec<(String, i64)> {
        let mut conn = self.queue_connection().await;
        let flat: Vec<String> = redis::cmd("ZRANGE")
            .arg(key)
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES")
            .query_async(&mut conn)
            .await
            .unwrap();
        flat.chunks_exact(2)
            .map(|pair| (pair[0].clone(), pair[1].parse::<f64>().unwrap() as i64))
            .collect()
    }

    pub async fn queued(&self) -> Vec<(String, i64)> {
        self.members(self.queue.queue_key()).await
    }

    pub async fn in_flight(&self) -> Vec<(String, i64)> {
        self.members(self.queue.processing_key()).await
    }

    async fn queue_connection(&self) -> deadpool_redis::Connection {
        self.redis.pool().get().await.unwrap()
    }
}

/// Consumes at `now` until a step takes nothing; the reports summed.
pub async fn drain(pool: &PgPool, queue: &ReminderQueue, config: &ConsumerConfig, now: DateTime<Utc>) -> ConsumeReport {
    let mut total = ConsumeReport::default();
    loop {
        let report = consumer::consume_once(pool, queue, config, now).await.unwrap();
        if report.taken == 0 {
            return total;
        }
        total.taken += report.taken;
        total.recorded += report.recorded;
        total.skipped += report.skipped;
    }
}

pub fn minutes(n: i64) -> TimeDelta {
    TimeDelta::minutes(n)
}

pub fn seconds(n: i64) -> TimeDelta {
    TimeDelta::seconds(n)
}

/// `loan_id:KIND`, as queued.
pub fn member(loan_id: i64, kind: ReminderKind) -> String {
    format!("{loan_id}:{kind}")
}

//! Loan reminders (CONTRACT §4): "due tomorrow" at 09:00 business time the day before a loan is
//! due, "overdue" at 09:00 the day after, delivered once each even when replicas crash.
//!
//! The path of one reminder:
//!
//! 1. A loan is created: [`loan_created`] queues both reminders in a Redis sorted set scored by
//!    their moment ([`timing`]). Returning the loan removes them ([`loan_returned`]).
//! 2. Every replica's [`run_reminder_worker`] polls each second. A Lua script moves due items, a
//!    bounded batch at a time, into a processing set scored by a visibility deadline
//!    ([`queue`]), atomically: two consumers never take the same item.
//! 3. The consumer records each in `notification` (unique per loan and kind, so a redelivery
//!    records nothing) and only then acknowledges it ([`consumer`]).
//! 4. Items of a consumer that died before acknowledging go back to the queue once their
//!    deadline passes ([`reaper`]).
//! 5. Postgres is the source of truth: [`reconciler`] rebuilds from it whatever Redis lost.
//!
//! Why not expiring keys and keyspace notifications (`SET reminder:42 .. PXAT ..` plus a
//! subscription to `__keyevent@0__:expired`)? They are fire-and-forget pub/sub: an event
//! published while no replica is subscribed (all restarting, a network blip, a deploy) is gone
//! for good, with nothing left to retry from. And Redis expires keys lazily or in a sampling
//! sweep, so the event may come well after the moment, or, for a key nobody touches, late by an
//! unbounded amount. A sorted set polled by score loses nothing and is on time to the poll
//! interval.
//!
//! When Redis is unreachable nothing here fails a request or stops the worker: the failure is
//! logged and counted, the loan is made or returned all the same, and the reconciler restores
//! the missing reminders once Redis is back.

pub mod consumer;
mod metrics;
pub mod queue;
pub mod reaper;
pub mod reconciler;
pub mod timing;
mod worker;

use chrono::NaiveDate;
use chrono_tz::Tz;
use deadpool_redis::Pool;
use sqlx::PgPool;

pub use crate::domain::reminder::{ParseReminderError, Reminder, ReminderKind};
pub use consumer::{ConsumeReport, ConsumerConfig, StepError, consume_once};
pub use queue::{DEFAULT_PREFIX, QueueError, QueueStats, ReminderQueue};
pub use reaper::reap_expired;
pub use reconciler::{ReconcileReport, reconcile};
pub use worker::{ReminderWorkerConfig, run_reminder_worker};

use crate::domain::LoanId;
use crate::store;

/// Queues the reminders of a loan just created (call after its transaction committed: a loan
/// rolled back must get none). Never fails the request: when Redis or the clock query fails,
/// this logs it, and the reconciler queues the reminders later.
///
/// Takes the database (for its clock), the queue's Redis pool (none: reminders are off) and the
/// business zone, not the HTTP state, so any caller that creates loans can queue them.
pub async fn loan_created(pool: &PgPool, redis: Option<&Pool>, tz: Tz, loan_id: LoanId, due_on: NaiveDate) {
    let Some(redis) = redis else { return };
    let scheduled = async {
        let now = store::clock::now(pool).await.map_err(StepError::from)?;
        let timed = timing::for_loan(loan_id, due_on, now, tz);
        ReminderQueue::new(redis.clone())
            .schedule(&timed)
            .await
            .map_err(StepError::from)
    };
    if let Err(error) = scheduled.await {
        tracing::warn!(loan.id = loan_id.0, %error, "loan reminders not queued; the reconciler will queue them");
    }
}

/// Removes the reminders of a loan just returned. Never fails the request: a reminder left
/// queued is dropped by the consumer, which finds the loan returned in Postgres.
pub async fn loan_returned(redis: Option<&Pool>, loan_id: LoanId) {
    let Some(redis) = redis else { return };
    if let Err(error) = ReminderQueue::new(redis.clone()).cancel(loan_id).await {
        tracing::warn!(loan.id = loan_id.0, %error, "loan reminders not cancelled; the consumer will drop them");
    }
}

/// The service queue's depth, in-flight count and oldest due item, for the jobs view. An error
/// means Redis did not answer (the view shows the queue as unavailable).
pub async fn queue_stats(redis: &Pool) -> Result<QueueStats, QueueError> {
    ReminderQueue::new(redis.clone()).stats().await
}

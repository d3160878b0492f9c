//! The reconciler: rebuilds the reminders Redis should hold from Postgres, the source of truth.
//!
//! Redis can lose what it holds (a restart without persistence, a failover to a lagging replica,
//! a FLUSHALL), and a loan's reminders can fail to reach it in the first place (Redis away when
//! the loan was made, or the process dying between the commit and the scheduling). Every open
//! loan whose reminders are neither recorded in `notification` nor queued is therefore queued
//! again, at start, every few minutes, and as soon as Redis is back after an outage.
//!
//! Queuing is `ZADD NX`, skipping reminders a consumer holds, so a healthy queue is left as it is
//! and the usual outcome is "0 restored". The one race left (a consumer records and acknowledges
//! a reminder between this walk reading Postgres and queuing it) costs one redelivery, which
//! records nothing: no reminder is ever sent twice.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use sqlx::PgPool;

use super::consumer::StepError;
use super::metrics;
use super::queue::ReminderQueue;
use super::timing::{self, Timed};
use crate::domain::business_date;
use crate::store;

/// Open loans read per query (and reminders queued per script call: at most twice this).
pub const RECONCILE_BATCH: i64 = 1_000;

/// What one walk did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReconcileReport {
    /// Open loans with a reminder still to send.
    pub loans: u64,
    /// Reminders that were neither queued nor held, and are queued now.
    pub restored: u64,
}

/// Walks every open loan with a reminder still to send at `now` and queues what is missing.
pub async fn reconcile(
    pool: &PgPool,
    queue: &ReminderQueue,
    now: DateTime<Utc>,
    tz: Tz,
) -> Result<ReconcileReport, StepError> {
    let today = business_date(now, tz);
    let mut report = ReconcileReport::default();
    let mut after = 0;
    loop {
        let loans = store::notifications::open_loans_missing_reminders(pool, today, after, RECONCILE_BATCH).await?;
        let Some(last) = loans.last() else { break };
        after = last.id.0;
        let missing: Vec<Timed> = loans
            .iter()
            .flat_map(|loan| {
                timing::for_loan(loan.id, loan.due_on, now, tz)
                    .into_iter()
                    .filter(|timed| !loan.sent(timed.reminder.kind))
            })
            .collect();
        report.loans += loans.len() as u64;
        report.restored += queue.schedule(&missing).await?;
        if (loans.len() as i64) < RECONCILE_BATCH {
            break;
        }
    }
    if report.restored > 0 {
        metrics::restored(report.restored);
        tracing::warn!(
            reminders.restored = report.restored,
            "reminders missing from Redis were queued again from Postgres"
        );
    }
    Ok(report)
}

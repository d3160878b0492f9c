//! The attempt timeline: one row per fire each replica handled, won or not.
//!
//! Execution records say what was settled; attempts say who tried, when, and what they saw
//! (the lock held by whom, a lost lease, a process still busy), so an operator can reconstruct
//! which replica ran what even for fires that settled nothing.

use chrono::{DateTime, Utc};

use super::PageRequest;

/// What happened to one fire on one replica.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptOutcome {
    /// Took the lock and ran.
    Won,
    /// Another holder had the lock.
    Held,
    /// This process was still running the previous fire; skipped, not queued.
    Busy,
    /// Renewal failed or the fence refused a write: the run stopped.
    LostLease,
    /// The lock store could not be reached.
    Unavailable,
    /// Took the lock and found every date already settled.
    NothingToDo,
}

impl AttemptOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            AttemptOutcome::Won => "WON",
            AttemptOutcome::Held => "HELD",
            AttemptOutcome::Busy => "BUSY",
            AttemptOutcome::LostLease => "LOST_LEASE",
            AttemptOutcome::Unavailable => "UNAVAILABLE",
            AttemptOutcome::NothingToDo => "NOTHING_TO_DO",
        }
    }
}

/// One attempt, as recorded.
#[derive(Debug, Clone)]
pub struct NewAttempt<'a> {
    pub task_name: &'a str,
    pub trigger: &'a str,
    pub instance_id: &'a str,
    pub fired_at: DateTime<Utc>,
    pub outcome: AttemptOutcome,
    pub fencing_token: Option<i64>,
    pub holder: Option<&'a str>,
    pub detail: Option<&'a str>,
}

#[derive(Debug, Clone)]
pub struct AttemptRow {
    pub id: i64,
    pub task_name: String,
    pub trigger: String,
    pub instance_id: String,
    pub fired_at: DateTime<Utc>,
    pub recorded_at: DateTime<Utc>,
    pub outcome: String,
    pub fencing_token: Option<i64>,
    pub holder: Option<String>,
    pub detail: Option<String>,
}

pub async fn record(executor: impl sqlx::PgExecutor<'_>, attempt: &NewAttempt<'_>) -> sqlx::Result<i64> {
    sqlx::query_scalar!(
        r#"
        insert into task_attempt (task_name, trigger, instance_id, fired_at, outcome, fencing_token, holder, detail)
        values ($1, $2, $3, $4, $5, $6, $7, $8)
        returning id
        "#,
        attempt.task_name,
        attempt.trigger,
        attempt.instance_id,
        attempt.fired_at,
        attempt.outcome.as_str(),
        attempt.fencing_token,
        attempt.holder,
        attempt.detail,
    )
    .fetch_one(executor)
    .await
}

/// Newest first; the cursor is the last id seen (rows with smaller ids follow).
pub async fn list(
    executor: impl sqlx::PgExecutor<'_>,
    task_name: &str,
    page: PageRequest,
) -> sqlx::Result<Vec<AttemptRow>> {
    sqlx::query_as!(
        AttemptRow,
        r#"
        select id, task_name, trigger, instance_id, fired_at, recorded_at, outcome, fencing_token, holder, detail
        from task_attempt
        where task_name = $1 and ($2::bigint = 0 or id < $2)
        order by id desc
        limit $3
        "#,
        task_name,
        page.after,
        page.fetch()
    )
    .fetch_all(executor)
    .await
}

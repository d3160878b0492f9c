//! The attempt timeline: one row per fire each replica handled, won or not.
//!
//! Execution records say what was settled; attempts say who tried, when, and what they saw
//! (the lock held by whom, a lost lease, a process still busy), so an operator can reconstruct
//! which replica ran what even for fires that settled nothing.

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use super::PageRequest;
use super::rows::newest_first_of_task;
pub use crate::domain::execution::AttemptOutcome;
use crate::domain::execution::Trigger;
use crate::domain::{FencingToken, TaskName};

/// One attempt, as recorded.
#[derive(Debug, Clone)]
pub struct NewAttempt<'a> {
    pub task_name: &'a TaskName,
    pub trigger: Trigger,
    pub instance_id: &'a str,
    pub fired_at: DateTime<Utc>,
    pub outcome: AttemptOutcome,
    pub fencing_token: Option<FencingToken>,
    pub holder: Option<&'a str>,
    pub detail: Option<&'a str>,
}

// The row as stored is the shape the API serves: one type (the doc comment below is the
// OpenAPI description).
/// One fire as one replica handled it: the attempt timeline.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Attempt {
    pub id: i64,
    #[schema(value_type = String)]
    pub task_name: TaskName,
    #[schema(value_type = String)]
    pub trigger: Trigger,
    pub instance_id: String,
    /// The scheduled instant for cron fires; the request time otherwise.
    pub fired_at: DateTime<Utc>,
    pub recorded_at: DateTime<Utc>,
    /// `WON`, `HELD`, `BUSY`, `LOST_LEASE`, `UNAVAILABLE` or `NOTHING_TO_DO`.
    #[schema(value_type = String)]
    pub outcome: AttemptOutcome,
    #[schema(value_type = Option<i64>)]
    pub fencing_token: Option<FencingToken>,
    /// Who held the lock, for `HELD`.
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
        attempt.task_name.as_str(),
        attempt.trigger.as_str(),
        attempt.instance_id,
        attempt.fired_at,
        attempt.outcome.as_str(),
        attempt.fencing_token.map(|token| token.0),
        attempt.holder,
        attempt.detail,
    )
    .fetch_one(executor)
    .await
}

newest_first_of_task!(Attempt);

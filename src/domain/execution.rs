//! The words of the job's records: what started a run, where an execution stands, and what one
//! fire came to on one replica.
//!
//! Each is a text column with a check constraint (`task_execution`, `task_attempt`), a JSON
//! string, a log field and a metric label, spelled the same everywhere. The spelling comes from
//! one case rule per enum, derived for every form: `sqlx::Type` (an unknown name read back is a
//! decode error), serde, strum (`Display`, `FromStr`, `as_str`).

use serde::{Deserialize, Serialize};
use strum::{Display, EnumString, IntoStaticStr};

/// What started a run (`task_execution.trigger`, `task_attempt.trigger`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, sqlx::Type, Display, EnumString, IntoStaticStr,
)]
#[serde(rename_all = "lowercase")]
#[sqlx(type_name = "text", rename_all = "lowercase")]
#[strum(serialize_all = "lowercase", parse_err_ty = ParseTriggerError, parse_err_fn = ParseTriggerError::of)]
pub enum Trigger {
    /// The cron schedule.
    Cron,
    /// The catch-up of a replica that started after a scheduled time.
    Startup,
    /// An operator: the admin API or the CLI.
    Manual,
}

impl Trigger {
    pub const ALL: [Trigger; 3] = [Trigger::Cron, Trigger::Startup, Trigger::Manual];

    /// The stored and wire spelling.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// A text that names no trigger.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown trigger {0:?}: expected cron, startup or manual")]
pub struct ParseTriggerError(pub String);

impl ParseTriggerError {
    fn of(value: &str) -> Self {
        ParseTriggerError(value.to_owned())
    }
}

/// Where an execution stands (`task_execution.status`): `RUNNING` until it ends `SUCCESS` or
/// `FAILED`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, sqlx::Type, Display, IntoStaticStr)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[sqlx(type_name = "text", rename_all = "SCREAMING_SNAKE_CASE")]
#[strum(serialize_all = "SCREAMING_SNAKE_CASE")]
pub enum ExecutionStatus {
    Running,
    Success,
    Failed,
}

impl ExecutionStatus {
    /// The stored and wire spelling.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// What happened to one fire on one replica (`task_attempt.outcome`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, sqlx::Type, Display, IntoStaticStr)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[sqlx(type_name = "text", rename_all = "SCREAMING_SNAKE_CASE")]
#[strum(serialize_all = "SCREAMING_SNAKE_CASE")]
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
    /// The stored and wire spelling, and the `outcome` label of the lock-attempt metric.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn triggers_round_trip() {
        assert_eq!(Trigger::ALL.map(Trigger::as_str), ["cron", "startup", "manual"]);
        for t in Trigger::ALL {
            assert_eq!(t.as_str().parse::<Trigger>(), Ok(t));
            assert_eq!(t.to_string(), t.as_str());
            assert_eq!(serde_json::to_string(&t).unwrap(), format!("\"{t}\""));
        }
        assert_eq!("Cron".parse::<Trigger>(), Err(ParseTriggerError("Cron".into())));
    }

    #[test]
    fn statuses_and_outcomes_keep_their_stored_spelling() {
        use AttemptOutcome::*;
        use ExecutionStatus::*;
        assert_eq!(
            [Running, Success, Failed].map(ExecutionStatus::as_str),
            ["RUNNING", "SUCCESS", "FAILED"]
        );
        assert_eq!(
            [Won, Held, Busy, LostLease, Unavailable, NothingToDo].map(AttemptOutcome::as_str),
            ["WON", "HELD", "BUSY", "LOST_LEASE", "UNAVAILABLE", "NOTHING_TO_DO"]
        );
        assert_eq!(serde_json::to_value(LostLease).unwrap(), "LOST_LEASE");
        assert_eq!(serde_json::to_value(Running).unwrap(), "RUNNING");
    }
}

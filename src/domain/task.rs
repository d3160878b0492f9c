//! The tasks this service runs on a schedule, by name.

use super::TaskName;

/// The nightly settlement's task name (CONTRACT §2): the key of its lock, executions, attempts,
/// alerts and audits. Defined here, below every module that keys by it, so that none of them
/// has to import the job to name it.
pub const SETTLE_FINES: TaskName = TaskName::from_static("settle-fines");

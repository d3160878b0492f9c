//! What a reminder is: a loan and a kind, spelled `"{loan_id}:{KIND}"` as a Redis set member.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use thiserror::Error;
use utoipa::ToSchema;

/// The two reminders a loan can get (CONTRACT §4). Stored and sent in upper case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ReminderKind {
    /// 09:00 business time on the day before `due_on`.
    DueTomorrow,
    /// 09:00 business time on the day after `due_on`: the loan's first overdue day.
    Overdue,
}

impl ReminderKind {
    pub const ALL: [ReminderKind; 2] = [ReminderKind::DueTomorrow, ReminderKind::Overdue];

    /// The stored and wire spelling (`notification.kind`, JSON, Redis members).
    pub const fn as_str(self) -> &'static str {
        match self {
            ReminderKind::DueTomorrow => "DUE_TOMORROW",
            ReminderKind::Overdue => "OVERDUE",
        }
    }
}

impl fmt::Display for ReminderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A text that names no reminder kind, or a set member that is not `"{loan_id}:{KIND}"`.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("not a reminder: {0:?}")]
pub struct ParseReminderError(pub String);

impl FromStr for ReminderKind {
    type Err = ParseReminderError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ReminderKind::ALL
            .into_iter()
            .find(|kind| kind.as_str() == s)
            .ok_or_else(|| ParseReminderError(s.to_owned()))
    }
}

/// One reminder of one loan: the identity of a queue item. Each exists at most once in the
/// queue, in the processing set and (once sent) in `notification`, which is what makes every
/// step idempotent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Reminder {
    pub loan_id: i64,
    pub kind: ReminderKind,
}

impl Reminder {
    pub fn new(loan_id: i64, kind: ReminderKind) -> Self {
        Reminder { loan_id, kind }
    }

    /// Both reminders of a loan (what a return cancels).
    pub fn both(loan_id: i64) -> [Reminder; 2] {
        ReminderKind::ALL.map(|kind| Reminder::new(loan_id, kind))
    }

    /// The sorted-set member: `"42:OVERDUE"`. Readable in `redis-cli`, and the loan id alone is
    /// enough: everything else is read from Postgres when the reminder is delivered.
    pub fn member(&self) -> String {
        format!("{}:{}", self.loan_id, self.kind)
    }
}

impl FromStr for Reminder {
    type Err = ParseReminderError;

    fn from_str(member: &str) -> Result<Self, Self::Err> {
        let invalid = || ParseReminderError(member.to_owned());
        let (loan_id, kind) = member.split_once(':').ok_or_else(invalid)?;
        Ok(Reminder {
            loan_id: loan_id.parse().map_err(|_| invalid())?,
            kind: kind.parse().map_err(|_| invalid())?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_round_trip_and_garbage_is_refused() {
        for reminder in Reminder::both(42) {
            assert_eq!(reminder.member().parse::<Reminder>(), Ok(reminder));
        }
        assert_eq!(Reminder::new(7, ReminderKind::DueTomorrow).member(), "7:DUE_TOMORROW");
        for garbage in ["", "42", "42:", ":OVERDUE", "x:OVERDUE", "42:overdue", "42:OVERDUE:1"] {
            assert!(garbage.parse::<Reminder>().is_err(), "{garbage:?}");
        }
    }

    #[test]
    fn kinds_serialise_as_stored() {
        assert_eq!(
            serde_json::to_string(&ReminderKind::DueTomorrow).unwrap(),
            r#""DUE_TOMORROW""#
        );
        assert_eq!(serde_json::to_string(&ReminderKind::Overdue).unwrap(), r#""OVERDUE""#);
    }
}

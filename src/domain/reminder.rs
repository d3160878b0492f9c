//! What a reminder is: a loan and a kind, spelled `"{loan_id}:{KIND}"` as a Redis set member.

use std::str::FromStr;

use thiserror::Error;

use super::ids::LoanId;
use super::stored_name::upper_snake_enum;

// Stored (`notification.kind`, a text column with a check constraint), sent and queued in upper
// case; every form is derived from that rule. (The doc comment is the OpenAPI description.)
upper_snake_enum! {
    /// The two reminders a loan can get (CONTRACT §4). Stored and sent in upper case.
    pub enum ReminderKind, parse error ParseReminderError::of {
        /// 09:00 business time on the day before `due_on`.
        DueTomorrow,
        /// 09:00 business time on the day after `due_on`: the loan's first overdue day.
        Overdue,
    }
}

impl ReminderKind {
    pub const ALL: [ReminderKind; 2] = [ReminderKind::DueTomorrow, ReminderKind::Overdue];

    /// The stored and wire spelling (`notification.kind`, JSON, Redis members).
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// A text that names no reminder kind, or a set member that is not `"{loan_id}:{KIND}"`.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("not a reminder: {0:?}")]
pub struct ParseReminderError(pub String);

impl ParseReminderError {
    fn of(text: &str) -> Self {
        ParseReminderError(text.to_owned())
    }
}

/// One reminder of one loan: the identity of a queue item. Each exists at most once in the
/// queue, in the processing set and (once sent) in `notification`, which is what makes every
/// step idempotent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Reminder {
    pub loan_id: LoanId,
    pub kind: ReminderKind,
}

impl Reminder {
    pub fn new(loan_id: LoanId, kind: ReminderKind) -> Self {
        Reminder { loan_id, kind }
    }

    /// Both reminders of a loan (what a return cancels).
    pub fn both(loan_id: LoanId) -> [Reminder; 2] {
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
            loan_id: LoanId(loan_id.parse().map_err(|_| invalid())?),
            kind: kind.parse().map_err(|_| invalid())?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_round_trip_and_garbage_is_refused() {
        for reminder in Reminder::both(LoanId(42)) {
            assert_eq!(reminder.member().parse::<Reminder>(), Ok(reminder));
        }
        assert_eq!(
            Reminder::new(LoanId(7), ReminderKind::DueTomorrow).member(),
            "7:DUE_TOMORROW"
        );
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

//! What an alert is: its kind, its state, and a new alert a rule asks for.
//!
//! The rules that decide when an alert is due are in `crate::alerts::conditions`; the types are
//! here so that storage (`crate::store::alerts`) can read and write alerts without depending on
//! the rules.

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use strum::{Display, EnumString, IntoStaticStr};
use utoipa::ToSchema;

use super::stored_name::upper_snake_enum;
use crate::domain::TaskName;

// Stored (`alert.kind`, a text column with a check constraint), sent and logged in upper case
// with words split by `_` (`CLOCK_SKEW`); every form is derived from that one rule. (The doc
// comment is the OpenAPI description.)
upper_snake_enum! {
    /// The alert kinds of CONTRACT §3.1.
    pub enum AlertKind, parse error UnknownName::kind {
        /// An execution ended FAILED and the date has no SUCCESS.
        Failed,
        /// An execution has been RUNNING longer than `FINESETTLE_JOB_TIMEOUT`.
        Timeout,
        /// No SUCCESS for an expected date (every date from the start date on) by its scheduled
        /// time + `FINESETTLE_MISSED_GRACE`.
        Missed,
        /// The audit of a month (business date = its first day) found fines or ledger entries that
        /// differ from a recomputation from the loans.
        Audit,
        /// A replica's clock differs from the database's by more than `FINESETTLE_MAX_CLOCK_SKEW`
        /// (business date = the database's date when it was first seen).
        ClockSkew,
        /// The database was promoted to a new timeline (a failover) while this service ran;
        /// acknowledged writes may be lost (business date = the database's date when a replica
        /// first noticed the timeline).
        DatabaseFailover,
    }
}

impl AlertKind {
    /// Every kind, for listings (the active-alert gauge) and parsing.
    pub const ALL: [AlertKind; 6] = [
        AlertKind::Failed,
        AlertKind::Timeout,
        AlertKind::Missed,
        AlertKind::Audit,
        AlertKind::ClockSkew,
        AlertKind::DatabaseFailover,
    ];

    /// The stored and wire spelling, and the `kind` label of the active-alert metric.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

// Stored in `alert.state`.
/// `ACTIVE` until the cause is gone, then `RESOLVED` for good.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema, sqlx::Type, Display, EnumString, IntoStaticStr,
)]
#[serde(rename_all = "UPPERCASE")]
#[sqlx(type_name = "text", rename_all = "UPPERCASE")]
#[strum(serialize_all = "UPPERCASE", parse_err_ty = UnknownName, parse_err_fn = UnknownName::state)]
pub enum AlertState {
    Active,
    Resolved,
}

impl AlertState {
    /// The stored and wire spelling.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// A kind or state name the database holds but this code does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown alert {what} `{value}`")]
pub struct UnknownName {
    what: &'static str,
    value: String,
}

impl UnknownName {
    fn kind(value: &str) -> Self {
        UnknownName {
            what: "kind",
            value: value.to_owned(),
        }
    }

    fn state(value: &str) -> Self {
        UnknownName {
            what: "state",
            value: value.to_owned(),
        }
    }
}

// The row as stored is the shape the API lists and the webhook sends: one type (the doc comment
// below is the OpenAPI description).
/// An alert as the API lists it and the webhook sends it (CONTRACT §6).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Alert {
    pub id: i64,
    pub kind: AlertKind,
    #[schema(value_type = String)]
    pub task_name: TaskName,
    /// The business date the alert is about (`YYYY-MM-DD`); for AUDIT, the first day of the
    /// audited month.
    pub business_date: NaiveDate,
    pub state: AlertState,
    pub raised_at: DateTime<Utc>,
    /// Set when the cause went away: a SUCCESS for the date, the run no longer RUNNING, a
    /// clean re-audit of the month, every replica's clock back within the limit, or every date
    /// a failover may have lost settled again.
    pub resolved_at: Option<DateTime<Utc>>,
    /// What happened, for people: the execution, its error, the deadline that passed, the
    /// loans an audit found, the replicas whose clock is off.
    pub detail: String,
    /// The execution behind a FAILED or TIMEOUT alert (null for the other kinds).
    pub execution_id: Option<i64>,
}

/// An alert a rule says should exist; the database decides whether it is new.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewAlert {
    pub kind: AlertKind,
    pub business_date: NaiveDate,
    pub detail: String,
    pub execution_id: Option<i64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for k in AlertKind::ALL {
            assert_eq!(k.as_str().parse::<AlertKind>(), Ok(k));
            assert_eq!(serde_json::to_value(k).unwrap(), k.as_str());
            assert_eq!(serde_json::from_value::<AlertKind>(k.as_str().into()).unwrap(), k);
        }
        let names: Vec<_> = AlertKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(
            names,
            [
                "FAILED",
                "TIMEOUT",
                "MISSED",
                "AUDIT",
                "CLOCK_SKEW",
                "DATABASE_FAILOVER"
            ]
        );
        for s in [AlertState::Active, AlertState::Resolved] {
            assert_eq!(s.as_str().parse::<AlertState>(), Ok(s));
        }
        assert!("failed".parse::<AlertKind>().is_err());
        assert_eq!("AUDIT".parse::<AlertKind>(), Ok(AlertKind::Audit));
        assert_eq!(
            "GONE".parse::<AlertState>().unwrap_err().to_string(),
            "unknown alert state `GONE`"
        );
    }
}

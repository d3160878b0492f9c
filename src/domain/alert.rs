//! What an alert is: its kind, its state, and a new alert a rule asks for.
//!
//! The rules that decide when an alert is due are in `crate::alerts::conditions`; the types are
//! here so that storage (`crate::store::alerts`) can read and write alerts without depending on
//! the rules.

use std::fmt;
use std::str::FromStr;

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The alert kinds: the three of CONTRACT §3, and the audit's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum AlertKind {
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
}

impl AlertKind {
    /// Every kind, for listings (the active-alert gauge) and parsing.
    pub const ALL: [AlertKind; 4] = [
        AlertKind::Failed,
        AlertKind::Timeout,
        AlertKind::Missed,
        AlertKind::Audit,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            AlertKind::Failed => "FAILED",
            AlertKind::Timeout => "TIMEOUT",
            AlertKind::Missed => "MISSED",
            AlertKind::Audit => "AUDIT",
        }
    }
}

/// `ACTIVE` until the cause is gone, then `RESOLVED` for good.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum AlertState {
    Active,
    Resolved,
}

impl AlertState {
    pub fn as_str(self) -> &'static str {
        match self {
            AlertState::Active => "ACTIVE",
            AlertState::Resolved => "RESOLVED",
        }
    }
}

/// A kind or state name the database holds but this code does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown alert {what} `{value}`")]
pub struct UnknownName {
    what: &'static str,
    value: String,
}

impl FromStr for AlertKind {
    type Err = UnknownName;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        AlertKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| UnknownName {
                what: "kind",
                value: s.to_owned(),
            })
    }
}

impl FromStr for AlertState {
    type Err = UnknownName;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [AlertState::Active, AlertState::Resolved]
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| UnknownName {
                what: "state",
                value: s.to_owned(),
            })
    }
}

impl fmt::Display for AlertKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
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
        for k in [AlertKind::Failed, AlertKind::Timeout, AlertKind::Missed] {
            assert_eq!(k.as_str().parse::<AlertKind>(), Ok(k));
            assert_eq!(serde_json::to_value(k).unwrap(), k.as_str());
        }
        for s in [AlertState::Active, AlertState::Resolved] {
            assert_eq!(s.as_str().parse::<AlertState>(), Ok(s));
        }
        assert!("failed".parse::<AlertKind>().is_err());
    }
}

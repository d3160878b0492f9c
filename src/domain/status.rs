//! The fine status machine and ledger entry kinds.
//!
//! Both are stored as upper-case text (`PENDING`, `CHARGE`, ...) in Postgres and JSON. Each enum
//! derives all its forms from one case rule: `sqlx::Type` reads and writes the text column (a
//! check constraint keeps it to the known names; an unknown one read back is a decode error),
//! serde the JSON, strum `Display`, `FromStr` (ASCII case ignored, so `?status=pending` works)
//! and `as_str`.

use serde::{Deserialize, Serialize};
use strum::{Display, EnumString, IntoStaticStr};
use thiserror::Error;

/// A text value that names no variant of the expected enum.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("unknown {kind} {value:?}")]
pub struct ParseStatusError {
    /// What was being parsed ("fine status" or "ledger kind").
    pub kind: &'static str,
    /// The rejected text.
    pub value: String,
}

impl ParseStatusError {
    fn fine_status(value: &str) -> Self {
        ParseStatusError {
            kind: "fine status",
            value: value.to_owned(),
        }
    }

    fn ledger_kind(value: &str) -> Self {
        ParseStatusError {
            kind: "ledger kind",
            value: value.to_owned(),
        }
    }
}

/// Lifecycle of a `fine_record` row: `PENDING → SETTLED → VOID`, `PENDING → VOID`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, sqlx::Type, Display, EnumString, IntoStaticStr,
)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[sqlx(type_name = "text", rename_all = "SCREAMING_SNAKE_CASE")]
#[strum(serialize_all = "SCREAMING_SNAKE_CASE", ascii_case_insensitive)]
#[strum(parse_err_ty = ParseStatusError, parse_err_fn = ParseStatusError::fine_status)]
pub enum FineStatus {
    /// Accruing; amount may still grow until final.
    Pending,
    /// Final and charged to the member's ledger (one CHARGE).
    Settled,
    /// Cancelled; if it was settled, reversed (one REVERSAL). Terminal.
    Void,
}

impl FineStatus {
    /// All statuses, for exhaustive tests and listings.
    pub const ALL: [FineStatus; 3] = [FineStatus::Pending, FineStatus::Settled, FineStatus::Void];

    /// The stored and wire spelling.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// Method form of [`can_transition`].
    pub fn can_transition_to(self, to: FineStatus) -> bool {
        can_transition(self, to)
    }
}

/// Whether a fine may move from `from` to `to`: only PENDING→SETTLED, SETTLED→VOID and
/// PENDING→VOID. Staying put is not a transition (so a repeated settle or void is a no-op the
/// caller detects, not a second ledger entry), and nothing leaves VOID.
pub fn can_transition(from: FineStatus, to: FineStatus) -> bool {
    use FineStatus::*;
    matches!((from, to), (Pending, Settled) | (Settled, Void) | (Pending, Void))
}

/// Kind of a `ledger_entry`. Amounts are signed from the library's side: what the member owes
/// goes up with a CHARGE and down with a REVERSAL or PAYMENT, and `balance_cents` is the sum.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, sqlx::Type, Display, EnumString, IntoStaticStr,
)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[sqlx(type_name = "text", rename_all = "SCREAMING_SNAKE_CASE")]
#[strum(serialize_all = "SCREAMING_SNAKE_CASE", ascii_case_insensitive)]
#[strum(parse_err_ty = ParseStatusError, parse_err_fn = ParseStatusError::ledger_kind)]
pub enum LedgerKind {
    /// A settled fine.
    Charge,
    /// Undoes the CHARGE of a fine voided after settlement.
    Reversal,
    /// Money received from the member.
    Payment,
}

impl LedgerKind {
    /// All kinds, for exhaustive tests and listings.
    pub const ALL: [LedgerKind; 3] = [LedgerKind::Charge, LedgerKind::Reversal, LedgerKind::Payment];

    /// The stored and wire spelling.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// The signed ledger amount for a non-negative `magnitude_cents`: positive for CHARGE,
    /// negative for REVERSAL and PAYMENT.
    ///
    /// Magnitudes come from fines (bounded by `31 × MAX_DAILY_FINE_CENTS`) and validated
    /// payments, so negation cannot overflow; it saturates rather than panics regardless.
    pub const fn signed_amount(self, magnitude_cents: i64) -> i64 {
        match self {
            LedgerKind::Charge => magnitude_cents,
            LedgerKind::Reversal | LedgerKind::Payment => magnitude_cents.saturating_neg(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use FineStatus::*;

    #[test]
    fn only_the_three_transitions_are_allowed() {
        let allowed = [(Pending, Settled), (Settled, Void), (Pending, Void)];
        for from in FineStatus::ALL {
            for to in FineStatus::ALL {
                assert_eq!(
                    can_transition(from, to),
                    allowed.contains(&(from, to)),
                    "{from} -> {to}"
                );
                assert_eq!(from.can_transition_to(to), can_transition(from, to));
            }
        }
        // Nothing leaves VOID.
        assert!(FineStatus::ALL.iter().all(|to| !can_transition(Void, *to)));
    }

    #[test]
    fn fine_status_round_trips() {
        for s in FineStatus::ALL {
            assert_eq!(s.as_str().parse::<FineStatus>(), Ok(s));
            assert_eq!(s.to_string(), s.as_str());
            let json = serde_json::to_string(&s).unwrap();
            assert_eq!(json, format!("\"{}\"", s.as_str()));
            assert_eq!(serde_json::from_str::<FineStatus>(&json).unwrap(), s);
        }
        assert_eq!("settled".parse::<FineStatus>(), Ok(Settled));
        let err = "PAID".parse::<FineStatus>().unwrap_err();
        assert_eq!(err.value, "PAID");
        assert!("".parse::<FineStatus>().is_err());
    }

    #[test]
    fn ledger_kind_round_trips() {
        assert_eq!(
            LedgerKind::ALL.map(LedgerKind::as_str),
            ["CHARGE", "REVERSAL", "PAYMENT"]
        );
        for k in LedgerKind::ALL {
            assert_eq!(k.as_str().parse::<LedgerKind>(), Ok(k));
            assert_eq!(k.to_string(), k.as_str());
            let json = serde_json::to_string(&k).unwrap();
            assert_eq!(serde_json::from_str::<LedgerKind>(&json).unwrap(), k);
        }
        assert!("REFUND".parse::<LedgerKind>().is_err());
    }

    #[test]
    fn ledger_signs_follow_the_library_side() {
        assert_eq!(LedgerKind::Charge.signed_amount(150), 150);
        assert_eq!(LedgerKind::Reversal.signed_amount(150), -150);
        assert_eq!(LedgerKind::Payment.signed_amount(150), -150);
        assert_eq!(LedgerKind::Payment.signed_amount(0), 0);
        // A charge and its reversal cancel out.
        let c = LedgerKind::Charge.signed_amount(3_100_000_000);
        assert_eq!(c + LedgerKind::Reversal.signed_amount(3_100_000_000), 0);
        assert_eq!(LedgerKind::Payment.signed_amount(i64::MIN), i64::MAX);
    }
}

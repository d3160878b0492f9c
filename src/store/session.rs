//! The session settings the service relies on, pinned on every connection whatever the
//! database's or role's defaults.
//!
//! A DBA's `alter database ... set` or `alter role ... set` reaches every session that does not
//! set its own value. Each setting below changes what the service's SQL means or whether it
//! finishes, so each is sent in the connection's startup packet (no extra round trip), where it
//! overrides those defaults:
//!
//! | setting | pinned to | a DBA's default would |
//! |---|---|---|
//! | `search_path` | the service's schema (`FINESETTLE_DB_SCHEMA`, `public` by default) | make migrations create a second copy of the schema elsewhere, and reads find nothing |
//! | `default_transaction_isolation` | `read committed` | turn the row waits the code is written for into serialization failures (the parent checks of §4.9 also need it) |
//! | `statement_timeout`, `lock_timeout` | `0` (none) | fail a month-end date on every fire; the job sets its own limits, [`StatementLimits`] |
//! | `idle_in_transaction_session_timeout` | `0` | end sessions the code keeps; the fence sets its own (`lock::fence`) |
//!
//! sqlx pins `TimeZone` (UTC), `DateStyle` (ISO) and `client_encoding` (UTF8) itself at connect.
//! `default_transaction_read_only` is deliberately not pinned: a database made read-only on
//! purpose is a read-only node, and is answered as one (503, readiness 503).

use std::time::Duration;

use sqlx::postgres::PgConnectOptions;

/// `options` with the settings of the table above added to its startup packet.
pub fn pinned(options: PgConnectOptions, schema: &Schema) -> PgConnectOptions {
    options.options([
        ("search_path", schema.as_str()),
        ("default_transaction_isolation", "read committed"),
        ("statement_timeout", "0"),
        ("lock_timeout", "0"),
        ("idle_in_transaction_session_timeout", "0"),
    ])
}

/// The schema that holds the service's tables: a plain lower-case identifier, so it needs no
/// quoting in `search_path` or `create schema`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schema(String);

impl Schema {
    /// PostgreSQL's own default, and the service's.
    pub fn public() -> Self {
        Schema("public".to_owned())
    }

    /// `name` when it is a plain identifier: a lower-case letter or `_`, then letters, digits or
    /// `_`, at most 63 bytes, and not a `pg_` name.
    pub fn parse(name: &str) -> Option<Self> {
        let mut chars = name.chars();
        let first_ok = chars.next().is_some_and(|c| c.is_ascii_lowercase() || c == '_');
        let rest_ok = chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        (first_ok && rest_ok && name.len() <= 63 && !name.starts_with("pg_")).then(|| Schema(name.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for Schema {
    fn default() -> Self {
        Schema::public()
    }
}

/// How long one statement of the job may run, and wait for a lock, before the database cancels
/// it: the date then fails (rolled back, recorded FAILED) and the next fire redoes it, instead of
/// the walk hanging behind a stuck statement. Zero is no limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatementLimits {
    pub statement_timeout: Duration,
    pub lock_timeout: Duration,
}

impl StatementLimits {
    /// No limit: what a connection has by default ([`pinned`]).
    pub const NONE: StatementLimits = StatementLimits {
        statement_timeout: Duration::ZERO,
        lock_timeout: Duration::ZERO,
    };

    /// `set local` statements for these limits, to send in one message with a `begin`.
    pub fn set_local(&self) -> String {
        format!(
            "set local statement_timeout = {}; set local lock_timeout = {}",
            self.statement_timeout.as_millis(),
            self.lock_timeout.as_millis()
        )
    }
}

impl Default for StatementLimits {
    fn default() -> Self {
        StatementLimits::NONE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schema_is_a_plain_identifier() {
        for good in ["public", "finesettle", "_x", "lib_2"] {
            assert_eq!(Schema::parse(good).unwrap().as_str(), good);
        }
        for bad in ["", "Public", "2x", "a-b", "a b", "pg_catalog", "x\"", &"a".repeat(64)] {
            assert!(Schema::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn limits_are_set_locally_in_milliseconds() {
        let limits = StatementLimits {
            statement_timeout: Duration::from_secs(300),
            lock_timeout: Duration::from_millis(1500),
        };
        assert_eq!(
            limits.set_local(),
            "set local statement_timeout = 300000; set local lock_timeout = 1500"
        );
    }
}

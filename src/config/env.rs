//! Typed reads of environment variables, each failure naming the variable and what it accepts.

use std::str::FromStr;
use std::time::Duration;

use chrono::NaiveDate;

/// A variable had a value the service cannot use. Printed as the reason the process stopped.
#[derive(Debug, thiserror::Error)]
#[error("{var}={value:?} is not valid: expected {expected}")]
pub struct ConfigError {
    pub var: &'static str,
    pub value: String,
    pub expected: String,
}

impl ConfigError {
    pub fn new(var: &'static str, value: String, expected: impl Into<String>) -> Self {
        ConfigError {
            var,
            value,
            expected: expected.into(),
        }
    }
}

pub(super) struct Env<F> {
    lookup: F,
}

impl<F: Fn(&str) -> Option<String>> Env<F> {
    pub(super) fn new(lookup: F) -> Self {
        Env { lookup }
    }

    /// The trimmed value, with an empty value treated as unset.
    pub(super) fn optional_string(&self, name: &str) -> Option<String> {
        (self.lookup)(name)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    }

    pub(super) fn string(&self, name: &str, default: &str) -> String {
        self.optional_string(name).unwrap_or_else(|| default.to_owned())
    }

    pub(super) fn parse_with<T>(
        &self,
        name: &'static str,
        default: &str,
        expected: &str,
        parse: impl Fn(&str) -> Option<T>,
    ) -> Result<T, ConfigError> {
        let value = self.string(name, default);
        parse(&value).ok_or_else(|| ConfigError::new(name, value, expected))
    }

    pub(super) fn parse<T: FromStr>(
        &self,
        name: &'static str,
        default: &str,
        expected: &str,
    ) -> Result<T, ConfigError> {
        self.parse_with(name, default, expected, |v| v.parse().ok())
    }

    pub(super) fn ranged<T>(&self, name: &'static str, default: T, min: T, max: T) -> Result<T, ConfigError>
    where
        T: FromStr + PartialOrd + std::fmt::Display + Copy,
    {
        let expected = format!("a whole number between {min} and {max}");
        match self.optional_string(name) {
            None => Ok(default),
            Some(v) => v
                .parse::<T>()
                .ok()
                .filter(|n| *n >= min && *n <= max)
                .ok_or_else(|| ConfigError::new(name, v, expected)),
        }
    }

    /// Durations as `15m`, `90s`, `1h 30m`, `500ms`.
    pub(super) fn duration(&self, name: &'static str, default: &str) -> Result<Duration, ConfigError> {
        self.parse_with(name, default, "a duration such as 15m, 90s or 1h 30m", |v| {
            humantime::parse_duration(v).ok()
        })
    }

    /// A duration as [`Env::duration`] reads it, zero refused.
    pub(super) fn positive_duration(&self, name: &'static str, default: &str) -> Result<Duration, ConfigError> {
        self.parse_with(name, default, "a duration above zero such as 5s, 90s or 1m", |v| {
            humantime::parse_duration(v).ok().filter(|d| !d.is_zero())
        })
    }

    pub(super) fn optional_date(&self, name: &'static str) -> Result<Option<NaiveDate>, ConfigError> {
        self.optional_string(name)
            .map(|v| {
                NaiveDate::parse_from_str(&v, "%Y-%m-%d").map_err(|_| ConfigError::new(name, v, "a date as YYYY-MM-DD"))
            })
            .transpose()
    }
}

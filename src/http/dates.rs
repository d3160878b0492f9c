//! Strict wire formats for the dates and instants clients send.
//!
//! chrono's own deserialisers accept more than the contract promises (one-digit months, signed
//! years, years PostgreSQL stores oddly or not at all). These accept exactly `YYYY-MM-DD` and
//! `YYYY-MM` (years 0001 to 9999) and RFC 3339, and say so in their message; serde prefixes the
//! field's name, so the 422 names the field.

use chrono::{DateTime, Datelike, NaiveDate, Utc};
use serde::{Deserialize, Deserializer};

const DATE_FORMAT: &str = "must be a date as YYYY-MM-DD, such as 2026-03-01";
const MONTH_FORMAT: &str = "must be a month as YYYY-MM, such as 2026-03";
const INSTANT_FORMAT: &str = "must be an RFC 3339 timestamp, such as 2026-03-01T09:30:00Z";

/// A `YYYY-MM-DD` date.
pub fn date<'de, D: Deserializer<'de>>(deserializer: D) -> Result<NaiveDate, D::Error> {
    let text = String::deserialize(deserializer).map_err(|_| serde::de::Error::custom(DATE_FORMAT))?;
    parse_date(&text).ok_or_else(|| serde::de::Error::custom(DATE_FORMAT))
}

/// A `YYYY-MM` month, as its first day.
pub fn month<'de, D: Deserializer<'de>>(deserializer: D) -> Result<NaiveDate, D::Error> {
    let text = String::deserialize(deserializer).map_err(|_| serde::de::Error::custom(MONTH_FORMAT))?;
    crate::domain::parse_month(&text).ok_or_else(|| serde::de::Error::custom(MONTH_FORMAT))
}

/// An optional `YYYY-MM-DD` date: absent or `null` is `None`.
pub fn optional_date<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<NaiveDate>, D::Error> {
    let text = Option::<String>::deserialize(deserializer).map_err(|_| serde::de::Error::custom(DATE_FORMAT))?;
    text.map(|t| parse_date(&t).ok_or_else(|| serde::de::Error::custom(DATE_FORMAT)))
        .transpose()
}

/// An optional RFC 3339 instant with any offset, as UTC: absent or `null` is `None`.
pub fn optional_instant<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<DateTime<Utc>>, D::Error> {
    let text = Option::<String>::deserialize(deserializer).map_err(|_| serde::de::Error::custom(INSTANT_FORMAT))?;
    text.map(|t| {
        DateTime::parse_from_rfc3339(&t)
            .map(|at| at.to_utc())
            .map_err(|_| serde::de::Error::custom(INSTANT_FORMAT))
    })
    .transpose()
}

fn parse_date(text: &str) -> Option<NaiveDate> {
    let shape_ok = text.len() == 10
        && text.bytes().enumerate().all(|(i, b)| {
            if i == 4 || i == 7 {
                b == b'-'
            } else {
                b.is_ascii_digit()
            }
        });
    if !shape_ok {
        return None;
    }
    NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .ok()
        .filter(|d| d.year() >= 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_strictly_yyyy_mm_dd() {
        assert_eq!(parse_date("2024-02-29"), NaiveDate::from_ymd_opt(2024, 2, 29));
        assert_eq!(parse_date("0001-01-01"), NaiveDate::from_ymd_opt(1, 1, 1));
        for bad in [
            "2023-02-29",
            "2024-2-29",
            "+202-02-01",
            "0000-01-01",
            "20240-01-01",
            "2024-01-01T00:00:00Z",
            " 2024-01-01",
            "",
        ] {
            assert_eq!(parse_date(bad), None, "{bad:?}");
        }
    }
}

//! How values read on the page: the small formatters every section shares.
//!
//! They return plain text; escaping is the templates' job (maud escapes every value it inserts,
//! in text and in attributes alike), so nothing here needs to know about HTML.

use chrono::{DateTime, SecondsFormat, Utc};
use chrono_tz::Tz;

use crate::format::thousands;

/// RFC 3339 in UTC, to the second.
pub fn utc(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// The same instant on the business zone's wall clock, with its offset.
pub fn business(at: DateTime<Utc>, tz: Tz) -> String {
    at.with_timezone(&tz).format("%Y-%m-%d %H:%M:%S %:z").to_string()
}

/// A span of time for people: "42 s", "3 min 5 s", "2 h 10 min", "3 d 4 h".
pub fn span(seconds: i64) -> String {
    let s = seconds.unsigned_abs();
    match s {
        0..60 => format!("{s} s"),
        60..3_600 => format!("{} min {} s", s / 60, s % 60),
        3_600..86_400 => format!("{} h {} min", s / 3_600, s % 3_600 / 60),
        _ => format!("{} d {} h", s / 86_400, s % 86_400 / 3_600),
    }
}

/// How long something took: "850 ms", "2.4 s", "3 min 5 s".
pub fn took(milliseconds: i64) -> String {
    match milliseconds {
        ..1_000 => format!("{} ms", milliseconds.max(0)),
        1_000..60_000 => format!("{:.1} s", milliseconds as f64 / 1000.0),
        _ => span(milliseconds / 1000),
    }
}

/// How far `at` is from `now`: "in 5 min 2 s" or "3 h 1 min ago".
pub fn relative(at: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let seconds = (at - now).num_seconds();
    if seconds >= 0 {
        format!("in {}", span(seconds))
    } else {
        format!("{} ago", span(seconds))
    }
}

/// Minor units as an amount with two decimals and thousands separators: `123456` → `1,234.56`.
pub fn money(cents: i64) -> String {
    let sign = if cents < 0 { "-" } else { "" };
    let cents = cents.unsigned_abs();
    format!("{sign}{}.{:02}", thousands(cents / 100), cents % 100)
}

/// The CSS class of a status or outcome word (`SUCCESS` → `s-success`), which the styles color.
pub fn status_class(word: &str) -> String {
    format!("s-{}", word.to_ascii_lowercase())
}

/// At most `max` characters, with an ellipsis when cut: long errors and details stay readable.
pub fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        let mut cut: String = text.chars().take(max - 1).collect();
        cut.push('…');
        cut
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formatters_read_naturally() {
        assert_eq!(span(42), "42 s");
        assert_eq!(span(185), "3 min 5 s");
        assert_eq!(span(-7_800), "2 h 10 min");
        assert_eq!(span(273_600), "3 d 4 h");
        assert_eq!(took(850), "850 ms");
        assert_eq!(took(2_449), "2.4 s");
        assert_eq!(took(185_000), "3 min 5 s");
        assert_eq!(money(123_456), "1,234.56");
        assert_eq!(money(5), "0.05");
        assert_eq!(money(-250), "-2.50");
        assert_eq!(status_class("LOST_LEASE"), "s-lost_lease");
        assert_eq!(shorten("replica-1", 9), "replica-1");
        assert_eq!(shorten("replica-10", 9), "replica-…");
        let at = "2026-03-14T18:00:00Z".parse().unwrap();
        assert_eq!(utc(at), "2026-03-14T18:00:00Z");
        assert_eq!(business(at, chrono_tz::Asia::Shanghai), "2026-03-15 02:00:00 +08:00");
    }
}

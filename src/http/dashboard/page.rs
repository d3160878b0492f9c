//! The page around the sections: head, styles, header, layout.

use maud::{Markup, PreEscaped, html};

use super::activity::{attempts_section, executions_section};
use super::data::DashboardData;
use super::job::{job_section, lock_section};
use super::status::{alerts_section, fines_section, queue_section};
use super::text::{business, utc};
use super::timeline::timeline_section;

/// Seconds between the page's own reloads.
pub const REFRESH_SECONDS: u32 = 10;

/// Inline, so that the page fetches nothing (the Content-Security-Policy allows inline styles
/// only). A constant of ours, so it is inserted as it is.
const STYLE: &str = include_str!("style.css");

pub fn render(data: &DashboardData) -> Markup {
    let body = html! {
        header {
            h1 { "finesettle " span { "operator dashboard" } }
            p {
                "Served by " strong { (data.served_by) }
                " · database time " (utc(data.now))
                " · business time " (business(data.now, data.tz)) " (" (data.tz.name()) ")"
                " · refreshes every " (REFRESH_SECONDS) " s"
            }
        }
        // What an operator asks first (what runs next, who holds the lock, is anything wrong),
        // then what happened, then the figures.
        main.grid {
            (job_section(data))
            div.stack { (lock_section(data)) (queue_section(data)) }
            (alerts_section(data))
            (fines_section(data))
            (timeline_section(data))
            (attempts_section(data))
            (executions_section(data))
        }
    };
    document("finesettle · operator dashboard", body)
}

/// The page shown when the database does not answer: it keeps refreshing, so the dashboard
/// comes back by itself.
pub fn unavailable() -> Markup {
    let body = html! {
        header { h1 { "finesettle " span { "operator dashboard" } } }
        main {
            section.card {
                h2 { "Database unavailable" }
                p { "The database did not answer. This page tries again every few seconds." }
            }
        }
    };
    document("finesettle · database unavailable", body)
}

fn document(title: &str, body: Markup) -> Markup {
    html! {
        (PreEscaped("<!doctype html>"))
        html lang="en" {
            head {
                meta charset="utf-8";
                meta http-equiv="refresh" content=(REFRESH_SECONDS);
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) }
                style { (PreEscaped(STYLE)) }
            }
            body { (body) }
        }
    }
}

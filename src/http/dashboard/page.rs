//! The page around the sections: head, styles, header, layout.

use std::fmt::Write;

use super::activity::{attempts_section, executions_section};
use super::data::DashboardData;
use super::html::{business, escape, utc};
use super::job::{job_section, lock_section};
use super::status::{alerts_section, fines_section, queue_section};
use super::timeline::timeline_section;

/// Seconds between the page's own reloads.
pub const REFRESH_SECONDS: u32 = 10;

pub fn render(data: &DashboardData) -> String {
    let mut body = String::with_capacity(32 * 1024);
    let _ = write!(
        body,
        r#"<header><h1>finesettle <span>operator dashboard</span></h1>
<p>Served by <strong>{served_by}</strong> · database time {now_utc} · business time {now_local} ({tz}) · refreshes every {REFRESH_SECONDS} s</p></header>
<main class="grid">"#,
        served_by = escape(&data.served_by),
        now_utc = utc(data.now),
        now_local = business(data.now, data.tz),
        tz = escape(data.tz.name()),
    );
    // What an operator asks first (what runs next, who holds the lock, is anything wrong), then
    // what happened, then the figures.
    job_section(&mut body, data);
    body.push_str(r#"<div class="stack">"#);
    lock_section(&mut body, data);
    queue_section(&mut body, data);
    body.push_str("</div>");
    alerts_section(&mut body, data);
    fines_section(&mut body, data);
    timeline_section(&mut body, data);
    attempts_section(&mut body, data);
    executions_section(&mut body, data);
    body.push_str("</main>");
    document("finesettle · operator dashboard", &body)
}

/// The page shown when the database does not answer: it keeps refreshing, so the dashboard
/// comes back by itself.
pub fn unavailable() -> String {
    document(
        "finesettle · database unavailable",
        r#"<header><h1>finesettle <span>operator dashboard</span></h1></header>
<main><section class="card"><h2>Database unavailable</h2><p>The database did not answer. This page tries again every few seconds.</p></section></main>"#,
    )
}

fn document(title: &str, body: &str) -> String {
    format!(
        r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="refresh" content="{REFRESH_SECONDS}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>{STYLE}</style></head>
<body>{body}</body></html>"#,
        title = escape(title),
    )
}

const STYLE: &str = "
:root{--ink:#1d2733;--muted:#5b6b7c;--line:#dde3ea;--bg:#f4f6f9;--card:#fff;
--ok:#2e7d32;--bad:#c62828;--warn:#e6a100;--info:#1565c0;--idle:#78909c}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,'Noto Sans',sans-serif;color:var(--ink);background:var(--bg)}
header{background:#1d2733;color:#fff;padding:14px 24px}
header h1{margin:0;font-size:20px;font-weight:600}
header h1 span{font-weight:400;color:#b8c4d0}
header p{margin:4px 0 0;color:#cfd8e1;font-size:13px}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(360px,1fr));gap:16px;padding:16px 24px}
.card{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:14px 16px;min-width:0;overflow-x:auto}
.wide{grid-column:1/-1}
.double{grid-column:span 2}
.stack{display:flex;flex-direction:column;gap:16px;min-width:0}
@media (max-width:900px){.double{grid-column:auto}}
h2{margin:0 0 10px;font-size:15px}
table{border-collapse:collapse;width:100%;font-size:13px}
caption{text-align:left;font-weight:600;padding:6px 0;color:var(--muted)}
th,td{text-align:left;padding:4px 8px;border-bottom:1px solid var(--line);vertical-align:top;white-space:nowrap}
td.wrap{white-space:normal;min-width:16em}
th{color:var(--muted);font-weight:600}
tfoot th{color:var(--ink);border-bottom:none}
.num{text-align:right;font-variant-numeric:tabular-nums}
code{font:12px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:#eef1f5;padding:1px 4px;border-radius:3px}
.facts{display:grid;grid-template-columns:max-content 1fr;gap:4px 14px;margin:0 0 8px}
.facts dt{color:var(--muted)}
.facts dd{margin:0}
.badge{display:inline-block;padding:1px 7px;border-radius:10px;font-size:11px;font-weight:700;letter-spacing:.02em;color:#fff;background:var(--idle)}
.badge.s-success,.badge.s-won,.badge.s-settled{background:var(--ok)}
.badge.s-failed,.badge.s-lost_lease,.badge.s-unavailable{background:var(--bad)}
.badge.s-running,.badge.s-busy,.badge.s-pending{background:var(--warn);color:#1d2733}
.badge.s-held{background:var(--info)}
.badge.s-free,.badge.s-nothing_to_do,.badge.s-void{background:var(--idle)}
.lease{height:8px;background:#e3e8ee;border-radius:4px;overflow:hidden}
.lease div{height:100%;background:var(--info)}
.legend{margin:0 0 6px;color:var(--muted);font-size:12px}
.swatch{display:inline-block;width:10px;height:10px;border-radius:2px;margin:0 4px 0 10px;vertical-align:-1px}
.swatch.s-success{background:var(--ok)}.swatch.s-failed{background:var(--bad)}.swatch.s-running{background:var(--warn)}
.timeline{display:block;max-width:100%;height:auto}
.timeline .run-band{fill:#fff}.timeline .run-band.alt{fill:#eef2f7}
.timeline .run-label{font-size:10px;fill:var(--muted)}
.timeline .lane-rule{stroke:var(--line)}
.timeline .lane-label{font-size:12px;font-weight:600;fill:var(--ink)}
.timeline .bar{fill:var(--idle)}
.timeline .bar.s-success{fill:var(--ok)}.timeline .bar.s-failed{fill:var(--bad)}.timeline .bar.s-running{fill:var(--warn)}
.timeline .bar-label{font-size:10px;fill:#fff;text-anchor:middle;dominant-baseline:central;pointer-events:none}
.axis{color:var(--muted);font-size:12px;margin:6px 0 0}
";

//! Tables of what happened: every replica's answer to each fire (who WON, who saw it HELD), and
//! the latest executions with their errors.

use std::fmt::Write;

use super::data::DashboardData;
use super::html::{business, escape, status_class, took, utc};
use super::timeline::shorten;
use crate::format::thousands;

/// Executions listed in the table under the timeline.
const EXECUTION_ROWS: usize = 10;

pub fn attempts_section(out: &mut String, data: &DashboardData) {
    out.push_str(r#"<section class="card wide" id="attempts"><h2>Attempts: each replica's answer to each fire</h2>"#);
    if data.attempts.is_empty() {
        out.push_str("<p>No fire yet.</p></section>");
        return;
    }
    let _ = write!(
        out,
        "<table><thead><tr><th>Fired at (UTC)</th><th>Business time ({})</th><th>Trigger</th><th>Replica</th>\
         <th>Outcome</th><th>Token</th><th>Holder</th><th>Detail</th></tr></thead><tbody>",
        escape(data.tz.name())
    );
    for attempt in &data.attempts {
        let _ = write!(
            out,
            r#"<tr><td>{fired}</td><td>{local}</td><td>{trigger}</td><td>{instance}</td><td><span class="badge {class}">{outcome}</span></td><td>{token}</td><td>{holder}</td><td class="wrap">{detail}</td></tr>"#,
            fired = utc(attempt.fired_at),
            local = business(attempt.fired_at, data.tz),
            trigger = escape(&attempt.trigger),
            instance = escape(&attempt.instance_id),
            class = status_class(&attempt.outcome),
            outcome = escape(&attempt.outcome),
            token = attempt.fencing_token.map(|t| t.to_string()).unwrap_or_default(),
            holder = escape(attempt.holder.as_deref().unwrap_or("")),
            detail = escape(&shorten(attempt.detail.as_deref().unwrap_or(""), 160)),
        );
    }
    out.push_str("</tbody></table></section>");
}

pub fn executions_section(out: &mut String, data: &DashboardData) {
    if data.executions.is_empty() {
        return;
    }
    out.push_str(
        r#"<section class="card wide" id="executions"><h2>Latest executions</h2><table><thead><tr><th>Id</th><th>Business date</th><th>Status</th><th>Replica</th><th>Trigger</th><th>Token</th><th>Rows</th><th>Started (UTC)</th><th>Took</th><th>Error</th></tr></thead><tbody>"#,
    );
    for execution in data.executions.iter().take(EXECUTION_ROWS) {
        let took = execution
            .finished_at
            .map(|f| took((f - execution.started_at).num_milliseconds()))
            .unwrap_or_else(|| "running".to_owned());
        let _ = write!(
            out,
            r#"<tr><td>{id}</td><td>{date}</td><td><span class="badge {class}">{status}</span></td><td>{instance}</td><td>{trigger}</td><td>{token}</td><td class="num">{rows}</td><td>{started}</td><td>{took}</td><td class="wrap">{error}</td></tr>"#,
            id = execution.id,
            date = execution.business_date,
            class = status_class(&execution.status),
            status = escape(&execution.status),
            instance = escape(&execution.instance_id),
            trigger = escape(&execution.trigger),
            token = execution.fencing_token,
            rows = thousands(execution.affected_rows.max(0) as u64),
            started = utc(execution.started_at),
            error = escape(&shorten(execution.error.as_deref().unwrap_or(""), 200)),
        );
    }
    out.push_str("</tbody></table></section>");
}

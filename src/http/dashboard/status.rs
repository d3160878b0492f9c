//! The service's state in figures: active alerts, the reminder queue, fine totals.

use std::fmt::Write;

use super::data::{DashboardData, QueueState};
use super::html::{escape, money, relative, utc};
use super::timeline::shorten;
use crate::format::thousands;

/// Fine statuses in the order of their life.
const FINE_STATUSES: [&str; 3] = ["PENDING", "SETTLED", "VOID"];

pub fn alerts_section(out: &mut String, data: &DashboardData) {
    out.push_str(r#"<section class="card double" id="alerts"><h2>Active alerts</h2>"#);
    if data.alerts.is_empty() {
        out.push_str(r#"<p><span class="badge s-success">OK</span> No active alert.</p></section>"#);
        return;
    }
    out.push_str(
        "<table><thead><tr><th>Kind</th><th>Business date</th><th>Raised</th><th>Detail</th></tr></thead><tbody>",
    );
    for alert in &data.alerts {
        let _ = write!(
            out,
            r#"<tr><td><span class="badge s-failed">{kind}</span></td><td>{date}</td><td title="{raised}">{ago}</td><td class="wrap">{detail}</td></tr>"#,
            kind = escape(&alert.kind),
            date = alert.business_date,
            raised = utc(alert.raised_at),
            ago = relative(alert.raised_at, data.now),
            detail = escape(&shorten(&alert.detail, 200)),
        );
    }
    out.push_str("</tbody></table>");
    if data.more_alerts {
        out.push_str("<p>More active alerts exist; see <code>GET /api/v1/alerts</code>.</p>");
    }
    out.push_str("</section>");
}

pub fn queue_section(out: &mut String, data: &DashboardData) {
    out.push_str(r#"<section class="card" id="reminders"><h2>Reminder queue</h2>"#);
    match &data.queue {
        QueueState::NotConfigured => {
            out.push_str("<p>Redis is not configured (<code>REDIS_URL</code>): no reminders.</p>")
        }
        QueueState::Unavailable => {
            out.push_str(r#"<p><span class="badge s-failed">UNAVAILABLE</span> Redis did not answer.</p>"#)
        }
        QueueState::Stats(stats) => {
            let oldest = stats.oldest_due_at.map_or_else(
                || "queue empty".to_owned(),
                |at| format!("{} ({})", utc(at), relative(at, data.now)),
            );
            let _ = write!(
                out,
                r#"<dl class="facts"><dt>Waiting</dt><dd class="num">{depth}</dd><dt>In flight</dt><dd class="num">{in_flight}</dd><dt>Oldest due</dt><dd>{oldest}</dd></dl>"#,
                depth = thousands(stats.depth),
                in_flight = thousands(stats.in_flight),
            );
        }
    }
    out.push_str("</section>");
}

pub fn fines_section(out: &mut String, data: &DashboardData) {
    out.push_str(
        r#"<section class="card" id="fines"><h2>Fines by status</h2><table><thead><tr><th>Status</th><th class="num">Fines</th><th class="num">Amount</th></tr></thead><tbody>"#,
    );
    let (mut count, mut cents) = (0, 0);
    for status in FINE_STATUSES {
        let total = data.fines.iter().find(|t| t.status == status);
        let (n, amount) = total.map_or((0, 0), |t| (t.count, t.amount_cents));
        count += n;
        cents += amount;
        let _ = write!(
            out,
            r#"<tr><td><span class="badge s-{class}">{status}</span></td><td class="num">{n}</td><td class="num">{amount}</td></tr>"#,
            class = status.to_lowercase(),
            n = thousands(n.max(0) as u64),
            amount = money(amount),
        );
    }
    let _ = write!(
        out,
        r#"</tbody><tfoot><tr><th>Total</th><th class="num">{}</th><th class="num">{}</th></tr></tfoot></table></section>"#,
        thousands(count.max(0) as u64),
        money(cents),
    );
}

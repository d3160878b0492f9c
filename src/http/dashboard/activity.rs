//! Tables of what happened: every replica's answer to each fire (who WON, who saw it HELD), and
//! the latest executions with their errors.

use maud::{Markup, html};

use super::data::DashboardData;
use super::text::{business, shorten, status_class, took, utc};
use crate::format::thousands;

/// Executions listed in the table under the timeline.
const EXECUTION_ROWS: usize = 10;

pub fn attempts_section(data: &DashboardData) -> Markup {
    html! {
        section #attempts .card.wide {
            h2 { "Attempts: each replica's answer to each fire" }
            @if data.attempts.is_empty() {
                p { "No fire yet." }
            } @else {
                table {
                    thead { tr {
                        th { "Fired at (UTC)" } th { "Business time (" (data.tz.name()) ")" }
                        th { "Trigger" } th { "Replica" } th { "Outcome" } th { "Token" }
                        th { "Holder" } th { "Detail" }
                    } }
                    tbody {
                        @for attempt in &data.attempts {
                            tr {
                                td { (utc(attempt.fired_at)) } td { (business(attempt.fired_at, data.tz)) }
                                td { (attempt.trigger) } td { (attempt.instance_id) }
                                td { span.badge.(status_class(attempt.outcome.as_str())) { (attempt.outcome) } }
                                td { @if let Some(token) = attempt.fencing_token { (token) } }
                                td { (attempt.holder.as_deref().unwrap_or("")) }
                                td.wrap { (shorten(attempt.detail.as_deref().unwrap_or(""), 160)) }
                            }
                        }
                    }
                }
            }
        }
    }
}

pub fn executions_section(data: &DashboardData) -> Markup {
    if data.executions.is_empty() {
        return html! {};
    }
    html! {
        section #executions .card.wide {
            h2 { "Latest executions" }
            table {
                thead { tr {
                    th { "Id" } th { "Business date" } th { "Status" } th { "Replica" } th { "Trigger" }
                    th { "Token" } th { "Rows" } th { "Started (UTC)" } th { "Took" } th { "Error" }
                } }
                tbody {
                    @for execution in data.executions.iter().take(EXECUTION_ROWS) {
                        tr {
                            td { (execution.id) } td { (execution.business_date) }
                            td { span.badge.(status_class(execution.status.as_str())) { (execution.status) } }
                            td { (execution.instance_id) } td { (execution.trigger) }
                            td { (execution.fencing_token) }
                            td.num { (thousands(execution.affected_rows.max(0) as u64)) }
                            td { (utc(execution.started_at)) }
                            td {
                                @if let Some(finished) = execution.finished_at {
                                    (took((finished - execution.started_at).num_milliseconds()))
                                } @else { "running" }
                            }
                            td.wrap { (shorten(execution.error.as_deref().unwrap_or(""), 200)) }
                        }
                    }
                }
            }
        }
    }
}

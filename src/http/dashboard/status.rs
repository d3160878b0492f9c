//! The service's state in figures: active alerts, the reminder queue, fine totals.

use maud::{Markup, html};

use super::data::{DashboardData, QueueState};
use super::text::{money, relative, shorten, status_class, utc};
use crate::domain::FineStatus;
use crate::format::thousands;

pub fn alerts_section(data: &DashboardData) -> Markup {
    html! {
        section #alerts .card.double {
            h2 { "Active alerts" }
            @if data.alerts.is_empty() {
                p { span.badge.s-success { "OK" } " No active alert." }
            } @else {
                table {
                    thead { tr { th { "Kind" } th { "Business date" } th { "Raised" } th { "Detail" } } }
                    tbody {
                        @for alert in &data.alerts {
                            tr {
                                td { span.badge.s-failed { (alert.kind) } }
                                td { (alert.business_date) }
                                td title=(utc(alert.raised_at)) { (relative(alert.raised_at, data.now)) }
                                td.wrap { (shorten(&alert.detail, 200)) }
                            }
                        }
                    }
                }
                @if data.more_alerts {
                    p { "More active alerts exist; see " code { "GET /api/v1/alerts" } "." }
                }
            }
        }
    }
}

pub fn queue_section(data: &DashboardData) -> Markup {
    html! {
        section #reminders .card {
            h2 { "Reminder queue" }
            @match &data.queue {
                QueueState::NotConfigured => {
                    p { "Redis is not configured (" code { "REDIS_URL" } "): no reminders." }
                }
                QueueState::Unavailable => {
                    p { span.badge.s-failed { "UNAVAILABLE" } " Redis did not answer." }
                }
                QueueState::Stats(stats) => { dl.facts {
                    dt { "Waiting" } dd.num { (thousands(stats.depth)) }
                    dt { "In flight" } dd.num { (thousands(stats.in_flight)) }
                    dt { "Oldest due" }
                    dd {
                        @if let Some(at) = stats.oldest_due_at {
                            (utc(at)) " (" (relative(at, data.now)) ")"
                        } @else { "queue empty" }
                    }
                } }
            }
        }
    }
}

pub fn fines_section(data: &DashboardData) -> Markup {
    // `FineStatus::ALL` is in the order of a fine's life.
    let rows: Vec<(FineStatus, i64, i64)> = FineStatus::ALL
        .into_iter()
        .map(|status| {
            let total = data.fines.iter().find(|t| t.status == status);
            let (count, cents) = total.map_or((0, 0), |t| (t.count, t.amount_cents));
            (status, count, cents)
        })
        .collect();
    let count: i64 = rows.iter().map(|r| r.1).sum();
    let cents: i64 = rows.iter().map(|r| r.2).sum();
    let fines = |n: i64| thousands(n.max(0) as u64);
    html! {
        section #fines .card {
            h2 { "Fines by status" }
            table {
                thead { tr { th { "Status" } th.num { "Fines" } th.num { "Amount" } } }
                tbody {
                    @for (status, n, amount) in rows {
                        tr {
                            td { span.badge.(status_class(status.as_str())) { (status) } }
                            td.num { (fines(n)) } td.num { (money(amount)) }
                        }
                    }
                }
                tfoot { tr { th { "Total" } th.num { (fines(count)) } th.num { (money(cents)) } } }
            }
        }
    }
}

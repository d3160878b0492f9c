//! The job's schedule with its next fires, and who holds its lock.

use maud::{Markup, html};

use super::data::{DashboardData, LockState};
use super::text::{business, relative, span, utc};
use crate::schedule::settle_target;

pub fn job_section(data: &DashboardData) -> Markup {
    let (job, tz) = (&data.job, data.tz);
    html! {
        section #job .card.double {
            h2 { "Job " code { (job.name) } }
            dl.facts {
                dt { "Schedule" } dd { code { (job.cron) } " in " (tz.name()) }
                dt { "Last settled date" }
                dd { @if let Some(date) = job.last_success { (date) } @else { "none yet" } }
            }
            table {
                caption { "Next fires" }
                thead { tr { th { "UTC" } th { "Business time (" (tz.name()) ")" } th { "Settles" } th { "When" } } }
                tbody {
                    @for &fire in &job.next_fires {
                        tr {
                            td { (utc(fire)) } td { (business(fire, tz)) }
                            td { (settle_target(fire, tz)) } td { (relative(fire, data.now)) }
                        }
                    }
                    @if job.next_fires.is_empty() {
                        tr { td colspan="4" { "The schedule has no further fire." } }
                    }
                }
            }
        }
    }
}

pub fn lock_section(data: &DashboardData) -> Markup {
    html! {
        section #lock .card {
            h2 { "Lock" }
            @match &data.lock {
                LockState::Never => { p { "Never taken: the job has not run yet." } }
                LockState::Unavailable => {
                    p { span.badge.s-failed { "UNAVAILABLE" } " The lock store did not answer." }
                }
                LockState::Row(lock) if lock.held => {
                    @let lease = (lock.locked_until - lock.locked_at).num_seconds().max(1);
                    @let left = (lock.locked_until - data.now).num_seconds().clamp(0, lease);
                    p {
                        span.badge.s-held { "HELD" } " by " strong { (lock.locked_by) }
                        ", fencing token " (lock.fencing_token)
                    }
                    dl.facts {
                        dt { "Taken at" } dd { (utc(lock.locked_at)) }
                        dt { "Lease until" } dd { (utc(lock.locked_until)) }
                        dt { "Time left" } dd { (span(left)) }
                    }
                    div.lease title="lease left" { div style={ "width:" (left * 100 / lease) "%" } {} }
                }
                LockState::Row(lock) => {
                    p {
                        span.badge.s-free { "FREE" } " Last held by " strong { (lock.locked_by) }
                        ", fencing token " (lock.fencing_token) "."
                    }
                    dl.facts {
                        dt { "Taken at" } dd { (utc(lock.locked_at)) }
                        dt { "Free since" }
                        dd { (utc(lock.locked_until)) " (" (relative(lock.locked_until, data.now)) ")" }
                    }
                }
            }
        }
    }
}

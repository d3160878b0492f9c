//! Recent executions as a picture: one lane per replica, one bar per business date worked on,
//! oldest on the left, colored by status. Consecutive dates of one run (same fencing token and
//! replica) share a shaded band, so each fire's winner reads at a glance. Inline SVG: no
//! script, no external asset; hovering a bar shows its details (SVG `<title>`).
//!
//! SVG elements are written `line … {}` rather than `line …;`: inside HTML an SVG element is
//! closed only by its end tag or `/>`, and maud's void form writes neither.

use std::collections::BTreeSet;

use maud::{Markup, html};

use super::data::DashboardData;
use super::text::{shorten, status_class, took, utc};
use crate::domain::execution::ExecutionStatus;
use crate::store::executions::Execution;

const LABEL_WIDTH: usize = 170;
const LANE_HEIGHT: usize = 64;
/// Room above the lanes for the run labels.
const HEADER: usize = 20;
/// The picture aims at this width; slots shrink to fit, down to [`MIN_SLOT`].
const TARGET_WIDTH: usize = 1160;
const MAX_SLOT: usize = 44;
const MIN_SLOT: usize = 12;
/// A bar gets its date written on it from this width.
const LABELLED_SLOT: usize = 14;
const MAX_LANE_LABEL: usize = 22;
/// The statuses the legend explains, in its order.
const LEGEND: [ExecutionStatus; 3] = [
    ExecutionStatus::Success,
    ExecutionStatus::Failed,
    ExecutionStatus::Running,
];

pub fn timeline_section(data: &DashboardData) -> Markup {
    let chronological: Vec<&Execution> = data.executions.iter().rev().collect();
    html! {
        section #timeline .card.wide {
            h2 { "Executions per replica" }
            @if let (Some(first), Some(last)) = (chronological.first(), chronological.last()) {
                p.legend {
                    @for (i, status) in LEGEND.into_iter().enumerate() {
                        @if i > 0 { " " }
                        span.swatch.(status_class(status.as_str())) {} (status)
                    }
                }
                (svg(&chronological))
                p.axis {
                    (chronological.len()) " most recent, oldest on the left (" (utc(first.started_at))
                    ") to newest on the right (" (utc(last.started_at)) "). Each bar is one business \
                    date, labelled MM-DD; a shaded band groups the dates of one run (one fencing token)."
                }
            } @else {
                p { "No execution yet." }
            }
        }
    }
}

fn svg(executions: &[&Execution]) -> Markup {
    let lanes: Vec<&str> = executions
        .iter()
        .map(|e| e.instance_id.as_str())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let slot = ((TARGET_WIDTH - LABEL_WIDTH) / executions.len()).clamp(MIN_SLOT, MAX_SLOT);
    let width = LABEL_WIDTH + executions.len() * slot + 8;
    let height = HEADER + lanes.len() * LANE_HEIGHT + 2;
    html! {
        svg.timeline role="img" aria-label="Executions per replica" width=(width) height=(height)
            viewBox={ "0 0 " (width) " " (height) } xmlns="http://www.w3.org/2000/svg" {
            @for (start, end, band) in runs(executions) {
                @let (x, w) = (LABEL_WIDTH + start * slot, (end - start) * slot);
                rect.run-band.alt[band % 2 == 1] x=(x) y="0" width=(w) height=(height) {}
                @if w >= 28 {
                    text.run-label x=(x + 3) y="13" { "#" (executions[start].fencing_token) }
                }
            }
            @for (i, lane) in lanes.iter().enumerate() {
                @let y = HEADER + i * LANE_HEIGHT;
                line.lane-rule x1="0" y1=(y) x2=(width) y2=(y) {}
                text.lane-label x="6" y=(y + LANE_HEIGHT / 2 + 4) { (shorten(lane, MAX_LANE_LABEL)) }
            }
            @for (i, execution) in executions.iter().enumerate() {
                @let lane = lanes.iter().position(|l| *l == execution.instance_id).unwrap_or(0);
                (bar(execution, LABEL_WIDTH + i * slot, HEADER + lane * LANE_HEIGHT, slot))
            }
        }
    }
}

/// The runs behind the alternate shading, as `(first, past the last, band number)`: consecutive
/// executions with the same token and replica.
fn runs(executions: &[&Execution]) -> Vec<(usize, usize, usize)> {
    let mut runs = Vec::new();
    let mut start = 0;
    for i in 1..=executions.len() {
        let same_run = i < executions.len()
            && executions[i].fencing_token == executions[start].fencing_token
            && executions[i].instance_id == executions[start].instance_id;
        if !same_run {
            runs.push((start, i, runs.len()));
            start = i;
        }
    }
    runs
}

fn bar(execution: &Execution, x: usize, lane_y: usize, slot: usize) -> Markup {
    let (bx, by, bw, bh) = (x + 1, lane_y + 6, slot - 2, LANE_HEIGHT - 12);
    let (cx, cy) = (bx + bw / 2, by + bh / 2);
    html! {
        rect.bar.(status_class(execution.status.as_str())) data-execution=(execution.id)
            x=(bx) y=(by) width=(bw) height=(bh) rx="3" { title { (describe(execution)) } }
        @if slot >= LABELLED_SLOT {
            text.bar-label x=(cx) y=(cy) transform={ "rotate(-90 " (cx) " " (cy) ")" } {
                (execution.business_date.format("%m-%d"))
            }
        }
    }
}

/// The hover text of a bar.
fn describe(execution: &Execution) -> String {
    let mut text = format!(
        "{date} {status} on {instance}, {trigger}, token {token}, {rows} rows, started {started}",
        date = execution.business_date,
        status = execution.status,
        instance = execution.instance_id,
        trigger = execution.trigger,
        token = execution.fencing_token,
        rows = execution.affected_rows,
        started = utc(execution.started_at),
    );
    if let Some(finished) = execution.finished_at {
        let took = took((finished - execution.started_at).num_milliseconds());
        text.push_str(&format!(", took {took}"));
    }
    if let Some(error) = &execution.error {
        text.push_str(&format!(": {}", shorten(error, 200)));
    }
    text
}

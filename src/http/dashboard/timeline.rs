//! Recent executions as a picture: one lane per replica, one bar per business date worked on,
//! oldest on the left, colored by status. Consecutive dates of one run (same fencing token and
//! replica) share a shaded band, so each fire's winner reads at a glance. Inline SVG: no
//! script, no external asset; hovering a bar shows its details (SVG `<title>`).

use std::collections::BTreeSet;
use std::fmt::Write;

use super::data::DashboardData;
use super::html::{escape, status_class, took, utc};
use crate::store::executions::ExecutionRow;

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

pub fn timeline_section(out: &mut String, data: &DashboardData) {
    out.push_str(r#"<section class="card wide" id="timeline"><h2>Executions per replica</h2>"#);
    if data.executions.is_empty() {
        out.push_str("<p>No execution yet.</p></section>");
        return;
    }
    let chronological: Vec<&ExecutionRow> = data.executions.iter().rev().collect();
    out.push_str(
        r#"<p class="legend"><span class="swatch s-success"></span>SUCCESS <span class="swatch s-failed"></span>FAILED <span class="swatch s-running"></span>RUNNING</p>"#,
    );
    svg(out, &chronological);
    let (first, last) = (chronological[0], chronological[chronological.len() - 1]);
    let _ = write!(
        out,
        r#"<p class="axis">{n} most recent, oldest on the left ({from}) to newest on the right ({to}). Each bar is one business date, labelled MM-DD; a shaded band groups the dates of one run (one fencing token).</p>"#,
        n = chronological.len(),
        from = utc(first.started_at),
        to = utc(last.started_at),
    );
    out.push_str("</section>");
}

fn svg(out: &mut String, executions: &[&ExecutionRow]) {
    let lanes: Vec<&str> = executions
        .iter()
        .map(|e| e.instance_id.as_str())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let slot = ((TARGET_WIDTH - LABEL_WIDTH) / executions.len()).clamp(MIN_SLOT, MAX_SLOT);
    let width = LABEL_WIDTH + executions.len() * slot + 8;
    let height = HEADER + lanes.len() * LANE_HEIGHT + 2;
    let _ = write!(
        out,
        r#"<svg class="timeline" role="img" aria-label="Executions per replica" width="{width}" height="{height}" viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">"#
    );
    run_bands(out, executions, slot, height);
    for (i, lane) in lanes.iter().enumerate() {
        let y = HEADER + i * LANE_HEIGHT;
        let _ = write!(
            out,
            r#"<line class="lane-rule" x1="0" y1="{y}" x2="{width}" y2="{y}"/><text class="lane-label" x="6" y="{ty}">{label}</text>"#,
            ty = y + LANE_HEIGHT / 2 + 4,
            label = escape(&shorten(lane, MAX_LANE_LABEL)),
        );
    }
    for (i, execution) in executions.iter().enumerate() {
        let lane = lanes.iter().position(|l| *l == execution.instance_id).unwrap_or(0);
        bar(
            out,
            execution,
            LABEL_WIDTH + i * slot,
            HEADER + lane * LANE_HEIGHT,
            slot,
        );
    }
    out.push_str("</svg>");
}

/// Alternate shading behind each run: consecutive executions with the same token and replica.
fn run_bands(out: &mut String, executions: &[&ExecutionRow], slot: usize, height: usize) {
    let mut start = 0;
    let mut band = 0;
    for i in 1..=executions.len() {
        let same_run = i < executions.len()
            && executions[i].fencing_token == executions[start].fencing_token
            && executions[i].instance_id == executions[start].instance_id;
        if same_run {
            continue;
        }
        let x = LABEL_WIDTH + start * slot;
        let w = (i - start) * slot;
        let class = if band % 2 == 0 { "run-band" } else { "run-band alt" };
        let _ = write!(
            out,
            r#"<rect class="{class}" x="{x}" y="0" width="{w}" height="{height}"/>"#
        );
        if w >= 28 {
            let _ = write!(
                out,
                r#"<text class="run-label" x="{tx}" y="13">#{token}</text>"#,
                tx = x + 3,
                token = executions[start].fencing_token
            );
        }
        band += 1;
        start = i;
    }
}

fn bar(out: &mut String, execution: &ExecutionRow, x: usize, lane_y: usize, slot: usize) {
    let (bx, by, bw, bh) = (x + 1, lane_y + 6, slot - 2, LANE_HEIGHT - 12);
    let _ = write!(
        out,
        r#"<rect class="bar {class}" data-execution="{id}" x="{bx}" y="{by}" width="{bw}" height="{bh}" rx="3"><title>{title}</title></rect>"#,
        class = status_class(&execution.status),
        id = execution.id,
        title = escape(&describe(execution)),
    );
    if slot >= LABELLED_SLOT {
        let (cx, cy) = (bx + bw / 2, by + bh / 2);
        let _ = write!(
            out,
            r#"<text class="bar-label" x="{cx}" y="{cy}" transform="rotate(-90 {cx} {cy})">{date}</text>"#,
            date = execution.business_date.format("%m-%d"),
        );
    }
}

/// The hover text of a bar.
fn describe(execution: &ExecutionRow) -> String {
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
        let _ = write!(
            text,
            ", took {}",
            took((finished - execution.started_at).num_milliseconds())
        );
    }
    if let Some(error) = &execution.error {
        let _ = write!(text, ": {}", shorten(error, 200));
    }
    text
}

/// At most `max` characters, with an ellipsis when cut.
pub fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        let mut cut: String = text.chars().take(max - 1).collect();
        cut.push('…');
        cut
    }
}

//! The results: a Markdown table and an SVG chart, both written by this program.

use std::fmt::Write as _;
use std::path::Path;

use chrono::NaiveDate;

use crate::clients::ApiRun;
use crate::settle::{DataSet, SettleRun};
use crate::stats::{OpStats, ms};

pub struct Report {
    pub date: NaiveDate,
    pub data: DataSet,
    pub replicas: usize,
    pub clients: usize,
    pub cores: usize,
    pub settle_alone: SettleRun,
    pub settle_under_load: SettleRun,
    pub api_alone: ApiRun,
    pub api_during: ApiRun,
}

const TABLE: &str = "api-load.md";
const CHART: &str = "api-load.svg";

impl Report {
    /// Writes both files into `dir`; returns their paths.
    pub fn write(&self, dir: &str) -> anyhow::Result<(String, String)> {
        std::fs::create_dir_all(dir)?;
        let table = Path::new(dir).join(TABLE);
        let chart = Path::new(dir).join(CHART);
        std::fs::write(&table, self.markdown())?;
        std::fs::write(&chart, self.svg())?;
        Ok((table.display().to_string(), chart.display().to_string()))
    }

    fn markdown(&self) -> String {
        let mut md = String::new();
        let _ = writeln!(md, "# API load during a settlement\n");
        let _ = writeln!(
            md,
            "{} · {} loans, {} members · {} replicas on loopback · {} closed-loop clients spread over them · \
             {} CPU cores shared by the clients, the replicas and PostgreSQL · settlement of {} (the last day \
             of a month: every fine of the month is accrued and settled).\n",
            chrono::Utc::now().format("%Y-%m-%d %H:%M UTC"),
            group(self.data.loans),
            group(self.data.members),
            self.replicas,
            self.clients,
            self.cores,
            self.date,
        );
        let _ = writeln!(md, "## Settlement\n");
        let _ = writeln!(md, "| run | replica | rows | time (s) | rows/s |");
        let _ = writeln!(md, "|---|---|---:|---:|---:|");
        for (label, run) in [
            ("alone", &self.settle_alone),
            ("during the API load", &self.settle_under_load),
        ] {
            let _ = writeln!(
                md,
                "| {label} | {} | {} | {:.2} | {} |",
                run.replica,
                group(run.rows),
                run.elapsed.as_secs_f64(),
                group(run.rows_per_second().round() as i64)
            );
        }
        let slowdown = self.settle_under_load.elapsed.as_secs_f64() / self.settle_alone.elapsed.as_secs_f64();
        let _ = writeln!(md, "\nUnder the API load the settlement took {slowdown:.2}× as long.\n");

        let _ = writeln!(md, "## API\n");
        let _ = writeln!(
            md,
            "| operation | phase | requests | req/s | p50 (ms) | p99 (ms) | max (ms) | errors |"
        );
        let _ = writeln!(md, "|---|---|---:|---:|---:|---:|---:|---:|");
        let alone = self.api_alone.stats();
        let during = self.api_during.stats();
        for (a, d) in alone.iter().zip(&during) {
            for (phase, s) in [("alone", a), ("during the settlement", d)] {
                let _ = writeln!(
                    md,
                    "| {} | {phase} | {} | {} | {:.1} | {:.1} | {:.1} | {} |",
                    op_label(s),
                    group(s.requests as i64),
                    group(s.per_second.round() as i64),
                    ms(s.p50),
                    ms(s.p99),
                    ms(s.max),
                    s.errors
                );
            }
        }
        let _ = writeln!(
            md,
            "\nWindows: API alone {:.1} s; during the settlement {:.1} s (requests started between the \
             settlement's request and its SUCCESS).",
            self.api_alone.window.as_secs_f64(),
            self.api_during.window.as_secs_f64()
        );
        for error in self.api_alone.errors.iter().chain(&self.api_during.errors) {
            let _ = writeln!(md, "\n- error: `{error}`");
        }
        let _ = writeln!(
            md,
            "\nEach client sends one request at a time (create loan, get member, list loans, return loan, \
             get member, list loans, repeated) to its replica; latency is measured by the client, from \
             sending the request to reading the whole answer. The settlement is triggered with \
             `POST /api/v1/jobs/settle-fines/runs` and timed from that request until its execution reads \
             SUCCESS; both runs start from the same data (settlement results and the clients' loans are \
             cleared, tables vacuumed and checkpointed in between). Chart: `{CHART}`."
        );
        md
    }

    fn svg(&self) -> String {
        let alone = self.api_alone.stats();
        let during = self.api_during.stats();
        let mut svg = Svg::new(960, 540);
        svg.text(
            24,
            32,
            18,
            "bold",
            &format!("API load across {} replicas during a settlement", self.replicas),
        );
        svg.text(
            24,
            54,
            12,
            "normal",
            &format!(
                "{} loans · {} clients · {} CPU cores shared by clients, replicas and PostgreSQL · settlement of {}",
                group(self.data.loans),
                self.clients,
                self.cores,
                self.date
            ),
        );

        // Latency by operation: p50 and p99, without and with the settlement running.
        let series = [
            ("p50, API alone", "#4C78A8", Metric::P50, false),
            ("p50, during the settlement", "#F58518", Metric::P50, true),
            ("p99, API alone", "#9ECAE9", Metric::P99, false),
            ("p99, during the settlement", "#FFBF79", Metric::P99, true),
        ];
        let (left, top, width, height) = (70.0, 130.0, 860.0, 240.0);
        svg.text(24, 88, 14, "bold", "Latency by operation (ms)");
        for (i, (label, colour, _, _)) in series.iter().enumerate() {
            let x = 70 + i as i64 * 210;
            svg.rect(x as f64, 98.0, 12.0, 12.0, colour);
            svg.text(x + 17, 109, 11, "normal", label);
        }
        let top_value = nice_ceiling(alone.iter().chain(&during).map(|s| ms(s.p99)).fold(1.0, f64::max) * 1.1);
        svg.axis(left, top, width, height, top_value);
        let groups = alone.len() as f64;
        let group_width = width / groups;
        let bar = (group_width - 40.0) / series.len() as f64;
        for (g, (a, d)) in alone.iter().zip(&during).enumerate() {
            let x0 = left + g as f64 * group_width + 20.0;
            for (i, (_, colour, metric, is_during)) in series.iter().enumerate() {
                let stats = if *is_during { d } else { a };
                let value = metric.of(stats);
                let h = value / top_value * height;
                let x = x0 + i as f64 * bar;
                svg.rect(x + 2.0, top + height - h, bar - 4.0, h, colour);
                svg.text_middle(x + bar / 2.0, top + height - h - 4.0, 10, &format!("{value:.1}"));
            }
            svg.text_middle(x0 + bar * 2.0, top + height + 18.0, 12, op_label(a));
        }

        // Throughput, and the settlement's rows per second.
        let a_total = alone.last().map_or(0.0, |s| s.per_second);
        let d_total = during.last().map_or(0.0, |s| s.per_second);
        svg.hbars(
            24.0,
            430.0,
            "API throughput (requests/s, all operations)",
            [
                ("API alone", a_total, "#4C78A8"),
                ("during the settlement", d_total, "#F58518"),
            ],
        );
        svg.hbars(
            500.0,
            430.0,
            "Settlement (rows/s)",
            [
                ("alone", self.settle_alone.rows_per_second(), "#54A24B"),
                (
                    "during the API load",
                    self.settle_under_load.rows_per_second(),
                    "#B279A2",
                ),
            ],
        );
        svg.finish()
    }
}

#[derive(Clone, Copy)]
enum Metric {
    P50,
    P99,
}

impl Metric {
    fn of(self, s: &OpStats) -> f64 {
        match self {
            Metric::P50 => ms(s.p50),
            Metric::P99 => ms(s.p99),
        }
    }
}

fn op_label(s: &OpStats) -> &'static str {
    s.op.map_or("all", |op| op.label())
}

/// The smallest 1, 2 or 5 times a power of ten, times five (the axis has five steps), at or
/// above `value`: axis labels read 0, 10, 20 ... rather than 0, 11, 22 ...
fn nice_ceiling(value: f64) -> f64 {
    let step = value / 5.0;
    let power = 10f64.powf(step.log10().floor());
    let nice = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * power)
        .find(|&s| s >= step)
        .unwrap_or(10.0 * power);
    nice * 5.0
}

/// An axis label: whole numbers without decimals, others with one.
fn tick(value: f64) -> String {
    if (value - value.round()).abs() < 1e-9 {
        format!("{value:.0}")
    } else {
        format!("{value:.1}")
    }
}

/// 1234567 -> "1,234,567"; the library's separator, with a sign for the chart's values.
fn group(n: i64) -> String {
    let digits = finesettle::format::thousands(n.unsigned_abs());
    if n < 0 { format!("-{digits}") } else { digits }
}

/// Just enough SVG for bar charts.
struct Svg {
    body: String,
}

impl Svg {
    fn new(width: i64, height: i64) -> Self {
        let mut body = String::new();
        let _ = writeln!(
            body,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif">"#
        );
        let _ = writeln!(body, r##"<rect width="100%" height="100%" fill="#ffffff"/>"##);
        Svg { body }
    }

    fn text(&mut self, x: i64, y: i64, size: u32, weight: &str, text: &str) {
        let _ = writeln!(
            self.body,
            r##"<text x="{x}" y="{y}" font-size="{size}" font-weight="{weight}" fill="#222">{}</text>"##,
            escape(text)
        );
    }

    fn text_middle(&mut self, x: f64, y: f64, size: u32, text: &str) {
        let _ = writeln!(
            self.body,
            r##"<text x="{x:.1}" y="{y:.1}" font-size="{size}" text-anchor="middle" fill="#333">{}</text>"##,
            escape(text)
        );
    }

    fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, fill: &str) {
        let _ = writeln!(
            self.body,
            r#"<rect x="{x:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{fill}"/>"#,
            w.max(0.0),
            h.max(0.0)
        );
    }

    fn line(&mut self, x1: f64, y1: f64, x2: f64, y2: f64, stroke: &str) {
        let _ = writeln!(
            self.body,
            r#"<line x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}" stroke="{stroke}" stroke-width="1"/>"#
        );
    }

    /// A vertical value axis from 0 to `max` with five grid lines.
    fn axis(&mut self, left: f64, top: f64, width: f64, height: f64, max: f64) {
        for i in 0..=5 {
            let value = max * f64::from(i) / 5.0;
            let y = top + height - height * f64::from(i) / 5.0;
            self.line(left, y, left + width, y, if i == 0 { "#666" } else { "#e3e3e3" });
            let _ = writeln!(
                self.body,
                r##"<text x="{:.1}" y="{:.1}" font-size="10" text-anchor="end" fill="#666">{}</text>"##,
                left - 6.0,
                y + 3.0,
                tick(value)
            );
        }
    }

    /// A titled pair of horizontal bars with their values.
    fn hbars(&mut self, x: f64, y: f64, title: &str, bars: [(&str, f64, &str); 2]) {
        self.text(x as i64, y as i64, 14, "bold", title);
        let max = bars.iter().map(|b| b.1).fold(1.0, f64::max);
        let (label_width, bar_width) = (150.0, 250.0);
        for (i, (label, value, colour)) in bars.iter().enumerate() {
            let row = y + 22.0 + i as f64 * 34.0;
            self.text(x as i64, (row + 16.0) as i64, 12, "normal", label);
            let w = value / max * bar_width;
            self.rect(x + label_width, row, w, 22.0, colour);
            self.text(
                (x + label_width + w + 6.0) as i64,
                (row + 16.0) as i64,
                12,
                "normal",
                &group(value.round() as i64),
            );
        }
    }

    fn finish(mut self) -> String {
        self.body.push_str("</svg>\n");
        self.body
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_tops_are_five_round_steps() {
        assert_eq!(nice_ceiling(43.0), 50.0);
        assert_eq!(nice_ceiling(51.0), 100.0);
        assert_eq!(nice_ceiling(7.3), 10.0);
        assert_eq!(nice_ceiling(2.2), 2.5);
        assert_eq!(tick(2.5), "2.5");
        assert_eq!(tick(20.0), "20");
    }

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(group(0), "0");
        assert_eq!(group(999), "999");
        assert_eq!(group(1000), "1,000");
        assert_eq!(group(-1234567), "-1,234,567");
    }
}

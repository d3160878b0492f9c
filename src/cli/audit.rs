//! `finesettle audit --month YYYY-MM`: the audit of one month from a terminal (`crate::audit`),
//! with the same report and the same `AUDIT` alert as the admin endpoint.

use chrono::NaiveDate;

use crate::audit::{self, AuditConfig};
use crate::config::Settings;
use crate::store;

/// `YYYY-MM` as the month's first day, for clap.
pub fn parse_month(text: &str) -> Result<NaiveDate, String> {
    crate::domain::parse_month(text).ok_or_else(|| "must be a month as YYYY-MM, such as 2026-03".to_owned())
}

/// Audits `month` and prints the report. Fails (a non-zero exit) when the month is not final
/// yet or has differences: a script or a cron wrapper notices either without reading the text.
pub async fn audit_month(settings: Settings, month: NaiveDate) -> anyhow::Result<()> {
    let pool = store::database::connect_in(&settings.database_url, &settings.db_schema, 2).await?;
    store::database::migrate(&pool).await?;
    let report = audit::audit_month(&pool, &AuditConfig::from_settings(&settings), month).await?;
    print!("{report}");
    anyhow::ensure!(
        report.differences_total == 0,
        "the audit of {} found differences ({}); the AUDIT alert names the loans",
        report.month,
        report.differences_total
    );
    Ok(())
}

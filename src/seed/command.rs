//! `finesettle seed` from a terminal: connect, migrate, seed with a progress bar, print a summary.

use indicatif::{ProgressBar, ProgressStyle};

use super::{Policy, SeedOptions, SeedReport, seed};
use crate::config::Settings;
use crate::format::thousands;
use crate::store;

pub async fn run(settings: Settings, options: SeedOptions) -> anyhow::Result<()> {
    let pool = store::database::connect_in(&settings.database_url, &settings.db_schema, 2).await?;
    store::database::migrate(&pool).await?;
    let policy = Policy {
        business_tz: settings.business_tz,
        daily_fine_cents: settings.daily_fine_cents,
    };
    // Drawn on stderr, and only on a terminal: logs of scripted runs stay clean.
    let bar = ProgressBar::new(0).with_style(
        ProgressStyle::with_template("seeding {msg:<8} [{bar:30}] {human_pos}/{human_len} rows, {per_sec}, {elapsed}")?
            .progress_chars("=> "),
    );
    let report = seed(&pool, policy, &options, &bar).await;
    bar.finish_and_clear();
    let report = report?;
    print_summary(&report, &options, &settings);
    Ok(())
}

fn print_summary(report: &SeedReport, options: &SeedOptions, settings: &Settings) {
    let mix = &report.mix;
    let seconds = report.elapsed.as_secs_f64();
    println!(
        "seeded {} members, {} books and {} loans borrowed from {} (today is {} in {})",
        thousands(report.members as u64),
        thousands(report.books as u64),
        thousands(report.loans() as u64),
        report.first_borrowed_on,
        report.today,
        settings.business_tz,
    );
    println!(
        "  {} open and overdue, {} on loan, {} returned late, {} returned on time",
        thousands(mix.overdue as u64),
        thousands(mix.on_loan as u64),
        thousands(mix.returned_late as u64),
        thousands(mix.returned_on_time as u64),
    );
    println!(
        "  in {seconds:.1} s ({} loans/s), seed {}",
        thousands((report.loans() as f64 / seconds.max(1e-3)) as u64),
        options.seed
    );
    if options.reset {
        println!(
            "  --reset kept the job records: dates settled before stay settled; \
             use a fresh database to settle the new loans from their first date"
        );
    }
}

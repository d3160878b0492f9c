//! `finesettle seed` from a terminal: connect, migrate, seed with a progress bar, print a summary.

use indicatif::{ProgressBar, ProgressStyle};

use super::{Policy, SeedOptions, SeedReport, seed};
use crate::config::Settings;
use crate::store;

pub async fn run(settings: Settings, options: SeedOptions) -> anyhow::Result<()> {
    let pool = store::database::connect(&settings.database_url, 2).await?;
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
        thousands(report.members),
        thousands(report.books),
        thousands(report.loans()),
        report.first_borrowed_on,
        report.today,
        settings.business_tz,
    );
    println!(
        "  {} open and overdue, {} on loan, {} returned late, {} returned on time",
        thousands(mix.overdue),
        thousands(mix.on_loan),
        thousands(mix.returned_late),
        thousands(mix.returned_on_time),
    );
    println!(
        "  in {seconds:.1} s ({} loans/s), seed {}",
        thousands((report.loans() as f64 / seconds.max(1e-3)) as usize),
        options.seed
    );
    if options.reset {
        println!(
            "  --reset kept the job records: dates settled before stay settled; \
             use a fresh database to settle the new loans from their first date"
        );
    }
}

/// `1234567` as `1,234,567`.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::thousands;

    #[test]
    fn thousands_are_separated() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }
}

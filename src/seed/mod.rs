//! `finesettle seed`: a realistic library to demonstrate the service on.
//!
//! Members with names and unique e-mail addresses, book copies with valid ISBN-13s, and loans
//! borrowed over the last `--days-back` business dates before today (by the database clock, in
//! the business zone): about `--overdue-share` of them open and overdue, a tenth on loan and not
//! yet due, the rest returned, a quarter of those late. No fines are written: the settlement job
//! accrues them from the loans, which is what the demo shows. Reminders are not queued either; the
//! reminder reconciler finds the open loans and queues theirs.
//!
//! Everything goes in one transaction with `COPY` (see [`copy`]), loans with their foreign keys
//! checked once at the end rather than row by row (see [`tables::suspend_loan_foreign_keys`]), so
//! a seed either lands whole or not at all, and a million loans take seconds. The same `--seed`
//! gives the same data set.
//!
//! - [`draw`]: the loans, drawn at random from the shape and laid out in memory (pure, unit-tested).
//! - [`names`]: names, addresses, titles and ISBNs.
//! - [`tables`]: the emptiness check, `--reset`, reading back generated ids.

mod command;
mod copy;
pub mod draw;
mod names;
mod rng;
mod tables;

use std::time::{Duration, Instant};

use chrono::{DateTime, Days, NaiveDate, TimeZone, Utc};
use chrono_tz::Tz;
use indicatif::ProgressBar;
use sqlx::{PgConnection, PgPool};

pub use self::command::run;
use self::copy::{CopyRow, copy_rows};
use self::draw::{DrawnLoan, Mix, Shape, ShapeError, draw_loans};
use self::rng::Rng;
use self::tables::IdTable;
pub use self::tables::LibraryCounts;
use crate::domain::business_date;
use crate::store;

/// What to generate. The defaults make a library small enough to browse and big enough for the
/// dashboard's totals to mean something.
#[derive(Debug, Clone, clap::Args)]
pub struct SeedOptions {
    /// Members to create.
    #[arg(long, default_value_t = 200)]
    pub members: usize,
    /// Book copies to create. Each open loan needs a copy of its own.
    #[arg(long, default_value_t = 1_000)]
    pub books: usize,
    /// Loans to create.
    #[arg(long, default_value_t = 2_000)]
    pub loans: usize,
    /// Share of the loans that are open and overdue today, between 0 and 1.
    #[arg(long, default_value_t = 0.3)]
    pub overdue_share: f64,
    /// Loans are borrowed within this many business dates before today.
    #[arg(long, default_value_t = 90)]
    pub days_back: u32,
    /// Seed of the random generator: the same seed gives the same data set.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Empty the business tables first (members, books, loans, fines, ledger, notifications).
    /// Job records (locks, executions, attempts, alerts) are kept.
    #[arg(long)]
    pub reset: bool,
}

impl Default for SeedOptions {
    fn default() -> Self {
        SeedOptions {
            members: 200,
            books: 1_000,
            loans: 2_000,
            overdue_share: 0.3,
            days_back: 90,
            seed: 42,
            reset: false,
        }
    }
}

/// The library policy the seeded loans follow.
#[derive(Debug, Clone, Copy)]
pub struct Policy {
    pub business_tz: Tz,
    /// Copied into every loan, as the API does when a loan is created.
    pub daily_fine_cents: i64,
}

/// What was written.
#[derive(Debug, Clone)]
pub struct SeedReport {
    /// Today's business date by the database clock: the loans end before it.
    pub today: NaiveDate,
    /// The first date loans were borrowed on.
    pub first_borrowed_on: NaiveDate,
    pub members: usize,
    pub books: usize,
    pub mix: Mix,
    pub elapsed: Duration,
}

impl SeedReport {
    pub fn loans(&self) -> usize {
        self.mix.open() + self.mix.returned()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SeedError {
    #[error(transparent)]
    Shape(#[from] ShapeError),
    #[error(
        "the library is not empty ({} members, {} books, {} loans); pass --reset to replace them",
        .0.members, .0.books, .0.loans
    )]
    NotEmpty(LibraryCounts),
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    #[error("copied {copied} {table} rows but read back {found} ids; was something else writing?")]
    IdsMismatch {
        table: &'static str,
        copied: usize,
        found: usize,
    },
}

/// Fills the library. Refuses a library that already has members, books or loans unless
/// `options.reset`. `progress` counts rows (members + books + loans); pass
/// `ProgressBar::hidden()` when nobody watches.
pub async fn seed(
    pool: &PgPool,
    policy: Policy,
    options: &SeedOptions,
    progress: &ProgressBar,
) -> Result<SeedReport, SeedError> {
    let started = Instant::now();
    let now = store::clock::now(pool).await?;
    let today = business_date(now, policy.business_tz);
    let shape = Shape {
        members: options.members,
        books: options.books,
        loans: options.loans,
        overdue_share: options.overdue_share,
        days_back: options.days_back,
        today,
    };
    let mix = shape.mix()?;
    let loans = draw_loans(&mut Rng::new(options.seed), &shape)?;
    progress.set_length((options.members + options.books + options.loans) as u64);

    let mut tx = pool.begin().await?;
    if options.reset {
        tables::reset_library(&mut tx).await?;
    }
    tables::lock_library(&mut tx).await?;
    let counts = tables::counts(&mut tx).await?;
    if !counts.is_empty() {
        return Err(SeedError::NotEmpty(counts));
    }
    let first_day = today - Days::new(u64::from(options.days_back));
    let mut rng = Rng::new(options.seed ^ 0x5EED_0000_0000_0001);
    progress.set_message("members");
    let member_ids = copy_with_ids(&mut tx, IdTable::Member, options.members, progress, |i, row| {
        write_member(&mut rng, first_day, i, row)
    })
    .await?;
    progress.set_message("books");
    let book_ids = copy_with_ids(&mut tx, IdTable::Book, options.books, progress, |_, row| {
        write_book(&mut rng, first_day, row)
    })
    .await?;
    progress.set_message("loans");
    let loans_in = LoanRows {
        loans: &loans,
        member_ids: &member_ids,
        book_ids: &book_ids,
        policy,
        now,
    };
    let foreign_keys = tables::suspend_loan_foreign_keys(&mut tx).await?;
    copy_loans(&mut tx, &mut rng, &loans_in, progress).await?;
    progress.set_message("checking");
    foreign_keys.restore(&mut tx).await?;
    tx.commit().await?;
    tables::analyze_library(&mut *pool.acquire().await?).await?;

    Ok(SeedReport {
        today,
        first_borrowed_on: loans.first().map_or(today, |l| l.borrowed_on),
        members: options.members,
        books: options.books,
        mix,
        elapsed: started.elapsed(),
    })
}

/// Copies `count` rows into `table`, `write_row` filling row `i`, and reads back their ids in
/// the order the rows were sent: the loans refer to members and books by those ids.
async fn copy_with_ids(
    conn: &mut PgConnection,
    table: IdTable,
    count: usize,
    progress: &ProgressBar,
    write_row: impl FnMut(usize, &mut CopyRow),
) -> Result<Vec<i64>, SeedError> {
    let after = tables::last_id(conn, table).await?;
    copy_rows(conn, table.copy_statement(), count, progress, write_row).await?;
    let ids = tables::ids_after(conn, table, after).await?;
    ensure_all_read_back(table.name(), count, ids)
}

/// Member `i`, joined within the two years before `first_day` (the first loan's).
fn write_member(rng: &mut Rng, first_day: NaiveDate, i: usize, row: &mut CopyRow) {
    let (name, email) = names::member(rng, i + 1);
    let joined = random_instant_before(rng, first_day, 730);
    row.text(&name).text(&email).value(rfc3339(joined));
}

/// A copy catalogued within the five years before `first_day`.
fn write_book(rng: &mut Rng, first_day: NaiveDate, row: &mut CopyRow) {
    let title = names::book_title(rng);
    // Old copies sometimes predate ISBNs in the catalogue.
    let isbn = (rng.below(10) > 0).then(|| names::isbn13(rng));
    let catalogued = random_instant_before(rng, first_day, 5 * 365);
    row.text(&title).optional(isbn).value(rfc3339(catalogued));
}

struct LoanRows<'a> {
    loans: &'a [DrawnLoan],
    member_ids: &'a [i64],
    book_ids: &'a [i64],
    policy: Policy,
    now: DateTime<Utc>,
}

async fn copy_loans(
    conn: &mut PgConnection,
    rng: &mut Rng,
    rows: &LoanRows<'_>,
    progress: &ProgressBar,
) -> Result<(), SeedError> {
    let statement = "copy loan (member_id, book_id, borrowed_on, due_on, returned_at, returned_on, \
                     daily_fine_cents, created_at) from stdin";
    let tz = rows.policy.business_tz;
    copy_rows(conn, statement, rows.loans.len(), progress, |i, row| {
        let loan = &rows.loans[i];
        // Lent in the morning, returned in the afternoon, in the business zone; never in the
        // future (a loan made "today" is stamped no later than now).
        let lent_at = local_instant(tz, loan.borrowed_on, rng.between(9 * 3600, 14 * 3600 - 1)).min(rows.now);
        let returned_at = loan
            .returned_on
            .map(|d| local_instant(tz, d, rng.between(14 * 3600, 20 * 3600 - 1)));
        row.value(rows.member_ids[loan.member])
            .value(rows.book_ids[loan.book])
            .value(loan.borrowed_on)
            .value(loan.due_on)
            .optional(returned_at.map(rfc3339))
            .optional(loan.returned_on)
            .value(rows.policy.daily_fine_cents)
            .value(rfc3339(lent_at));
    })
    .await?;
    Ok(())
}

fn ensure_all_read_back(table: &'static str, copied: usize, ids: Vec<i64>) -> Result<Vec<i64>, SeedError> {
    if ids.len() == copied {
        Ok(ids)
    } else {
        Err(SeedError::IdsMismatch {
            table,
            copied,
            found: ids.len(),
        })
    }
}

/// An instant within the `days` days before `day` (UTC).
fn random_instant_before(rng: &mut Rng, day: NaiveDate, days: u64) -> DateTime<Utc> {
    let midnight = (day - Days::new(rng.between(1, days))).and_time(chrono::NaiveTime::MIN);
    Utc.from_utc_datetime(&midnight) + chrono::Duration::seconds(rng.below(86_400) as i64)
}

/// `seconds` after local midnight of `date` in `tz`. The hours used (09:00 to 20:00) are never
/// skipped by a daylight-saving change in practice; if one is, an hour later is used.
fn local_instant(tz: Tz, date: NaiveDate, seconds: u64) -> DateTime<Utc> {
    let local = date.and_time(chrono::NaiveTime::MIN) + chrono::Duration::seconds(seconds as i64);
    tz.from_local_datetime(&local)
        .earliest()
        .or_else(|| tz.from_local_datetime(&(local + chrono::Duration::hours(1))).earliest())
        .map_or_else(|| Utc.from_utc_datetime(&local), |t| t.with_timezone(&Utc))
}

/// RFC 3339 in UTC, which COPY reads as a `timestamptz`.
fn rfc3339(at: DateTime<Utc>) -> impl std::fmt::Display {
    at.format("%Y-%m-%dT%H:%M:%SZ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_instants_fall_on_their_business_date() {
        let tz: Tz = "Asia/Shanghai".parse().unwrap();
        let date = NaiveDate::from_ymd_opt(2026, 3, 1).unwrap();
        let at = local_instant(tz, date, 9 * 3600);
        assert_eq!(at.to_rfc3339(), "2026-03-01T01:00:00+00:00");
        assert_eq!(business_date(at, tz), date);
        // A day with a daylight-saving change still gives an instant on that date.
        let ny: Tz = "America/New_York".parse().unwrap();
        let spring = NaiveDate::from_ymd_opt(2026, 3, 8).unwrap();
        assert_eq!(business_date(local_instant(ny, spring, 2 * 3600 + 30 * 60), ny), spring);
    }
}

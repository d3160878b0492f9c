//! Databases and loans for the tests: a few thousand loans over several months, inserted with
//! plain SQL, so that every business date of a run has work to do.

use chrono::{Days, NaiveDate};
use finesettle::domain::LoanTerms;
use sqlx::PgPool;

use crate::common::data::{days, insert_loans, load_loans, random_loans, ymd};
use crate::common::database::TestDatabase;

/// Loans per test: enough for many batches per date at the small batch sizes the tests use, and
/// for a backfill that takes seconds, small enough for the oracle to stay quick.
pub const LOANS: usize = 3_000;

/// The range the fixed-date tests settle: loans of [`random_loans`] are busiest from January to
/// April 2026, and this range crosses the February and March month ends.
pub fn busy_range() -> (NaiveDate, NaiveDate) {
    (ymd(2026, 2, 10), ymd(2026, 3, 31))
}

/// A migrated database of its own seeded with `fixed_loans(loans_seed)`, and the [`busy_range`]
/// the process tests back-fill over it: (database, pool, the loans as stored, (from, to), every
/// date from `from` to `to`). Keep the `TestDatabase`: dropping it drops the database.
pub async fn seeded_busy_range(
    loans_seed: u64,
) -> (TestDatabase, PgPool, Loans, (NaiveDate, NaiveDate), Vec<NaiveDate>) {
    let (database, pool) = migrated_db().await;
    let loans = seed(&pool, &fixed_loans(loans_seed)).await;
    let (from, to) = busy_range();
    (database, pool, loans, (from, to), days(from, to))
}

/// Loans as stored, by id.
pub type Loans = Vec<(i64, LoanTerms)>;

/// A database of its own, migrated, for tests that run the real binary against it (the
/// processes migrate it again at start, a no-op). Keep the `TestDatabase`: dropping it drops the
/// database.
pub async fn migrated_db() -> (TestDatabase, PgPool) {
    migrated_db_with(4).await
}

/// [`migrated_db`] with a pool of `max_connections` (the settlement tests' own database takes 8).
pub async fn migrated_db_with(max_connections: u32) -> (TestDatabase, PgPool) {
    finesettle::telemetry::init();
    let database = TestDatabase::create().await;
    let pool = finesettle::store::database::connect(database.url(), max_connections)
        .await
        .expect("connect to the test database");
    finesettle::store::database::migrate(&pool).await.expect("migrate");
    (database, pool)
}

/// Inserts `loans` and answers them as stored, by id.
pub async fn seed(pool: &PgPool, loans: &[LoanTerms]) -> Vec<(i64, LoanTerms)> {
    insert_loans(pool, loans).await;
    load_loans(pool).await
}

/// [`random_loans`], borrowed from December 2025 to April 2026.
pub fn fixed_loans(seed: u64) -> Vec<LoanTerms> {
    random_loans(seed, LOANS)
}

/// [`random_loans`] moved in time so that the last of them was borrowed five days before
/// `today`: the weeks before `today` are as busy as March 2026 is for [`fixed_loans`]. A return
/// that would fall on or after `today` has not happened yet: the loan is open.
pub fn recent_loans(seed: u64, today: NaiveDate) -> Vec<LoanTerms> {
    let shift = chrono::Duration::days((today - Days::new(5) - ymd(2026, 4, 10)).num_days());
    let moved = |d: NaiveDate| d.checked_add_signed(shift).expect("a date in range");
    random_loans(seed, LOANS)
        .into_iter()
        .map(|l| LoanTerms {
            borrowed_on: moved(l.borrowed_on),
            due_on: moved(l.due_on),
            returned_on: l.returned_on.map(moved).filter(|r| *r < today),
            daily_fine_cents: l.daily_fine_cents,
        })
        .collect()
}

//! Seeded random loan data, inserted with plain SQL, and read back as domain terms.

use chrono::{Days, NaiveDate};
use finesettle::domain::{LoanTerms, month_end};
use sqlx::PgPool;

pub fn ymd(y: i32, m: u32, d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(y, m, d).unwrap()
}

/// `from..=to`, oldest first.
pub fn days(from: NaiveDate, to: NaiveDate) -> Vec<NaiveDate> {
    from.iter_days().take_while(|d| *d <= to).collect()
}

/// SplitMix64: a small, seedable generator, so a failing seed can be replayed exactly.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    pub fn days(&mut self, n: u64) -> Days {
        Days::new(self.below(n))
    }

    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = usize::try_from(self.below(i as u64 + 1)).unwrap();
            items.swap(i, j);
        }
    }
}

/// `count` loans borrowed between 2025-12-10 and 2026-04-10, in the shapes that matter: due the
/// day borrowed, a few weeks later or at a month end; open, returned the day borrowed, early, on
/// the due date, the day after, a few days late, weeks or months late (across month ends); daily
/// fines of 50, random, and 0.
pub fn random_loans(seed: u64, count: usize) -> Vec<LoanTerms> {
    let mut rng = Rng::new(seed);
    let first = ymd(2025, 12, 10);
    (0..count)
        .map(|_| {
            let borrowed_on = first + rng.days(122);
            let due_on = match rng.below(4) {
                0 => borrowed_on,
                1 => month_end(borrowed_on + rng.days(40)),
                _ => borrowed_on + Days::new(1) + rng.days(30),
            };
            let returned_on = match rng.below(9) {
                0 | 1 => None,
                2 => Some(borrowed_on),
                3 => Some(due_on),
                4 => Some(due_on + Days::new(1)),
                5 => Some(due_on + Days::new(1) + rng.days(9)),
                6 | 7 => Some(due_on + Days::new(5) + rng.days(80)),
                _ => Some((due_on - rng.days(6)).max(borrowed_on)),
            };
            let daily_fine_cents = match rng.below(10) {
                0 => 0,
                1..=3 => 1 + i64::try_from(rng.below(1_000)).unwrap(),
                _ => 50,
            };
            LoanTerms {
                borrowed_on,
                due_on,
                returned_on,
                daily_fine_cents,
            }
        })
        .collect()
}

/// Inserts `loans` (with ten members and one book per loan) and returns their ids in order.
pub async fn insert_loans(pool: &PgPool, loans: &[LoanTerms]) -> Vec<i64> {
    let members: Vec<i64> = sqlx::query_scalar(
        "insert into member (name, email) select 'member ' || g, 'member' || g || '@example.org' \
         from generate_series(1, 10) g returning id",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    let books: Vec<i64> = sqlx::query_scalar(
        "insert into book (title) select 'book ' || g from generate_series(1, $1) g order by g returning id",
    )
    .bind(i32::try_from(loans.len()).unwrap())
    .fetch_all(pool)
    .await
    .unwrap();
    let member_ids: Vec<i64> = (0..loans.len()).map(|i| members[i % members.len()]).collect();
    let borrowed: Vec<NaiveDate> = loans.iter().map(|l| l.borrowed_on).collect();
    let due: Vec<NaiveDate> = loans.iter().map(|l| l.due_on).collect();
    let returned: Vec<Option<NaiveDate>> = loans.iter().map(|l| l.returned_on).collect();
    let daily: Vec<i64> = loans.iter().map(|l| l.daily_fine_cents).collect();
    sqlx::query_scalar(
        r#"
        insert into loan (member_id, book_id, borrowed_on, due_on, returned_at, returned_on, daily_fine_cents)
        select m, b, bo, du, (r + time '12:00') at time zone 'Asia/Shanghai', r, f
        from unnest($1::bigint[], $2::bigint[], $3::date[], $4::date[], $5::date[], $6::bigint[])
            with ordinality as t(m, b, bo, du, r, f, n)
        order by n
        returning id
        "#,
    )
    .bind(&member_ids)
    .bind(&books)
    .bind(&borrowed)
    .bind(&due)
    .bind(&returned)
    .bind(&daily)
    .fetch_all(pool)
    .await
    .unwrap()
}

/// Every loan as the database holds it now, by id.
pub async fn load_loans(pool: &PgPool) -> Vec<(i64, LoanTerms)> {
    let rows: Vec<(i64, NaiveDate, NaiveDate, Option<NaiveDate>, i64)> =
        sqlx::query_as("select id, borrowed_on, due_on, returned_on, daily_fine_cents from loan order by id")
            .fetch_all(pool)
            .await
            .unwrap();
    rows.into_iter()
        .map(|(id, borrowed_on, due_on, returned_on, daily_fine_cents)| {
            (
                id,
                LoanTerms {
                    borrowed_on,
                    due_on,
                    returned_on,
                    daily_fine_cents,
                },
            )
        })
        .collect()
}

/// Moves a loan's return to `returned_on` (a correction or an import of an older return).
pub async fn set_return(pool: &PgPool, loan_id: i64, returned_on: NaiveDate) {
    sqlx::query(
        "update loan set returned_on = $2, returned_at = ($2 + time '12:00') at time zone 'Asia/Shanghai' \
         where id = $1",
    )
    .bind(loan_id)
    .bind(returned_on)
    .execute(pool)
    .await
    .unwrap();
}

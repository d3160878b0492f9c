//! Fines never depend on when a loan was recorded (issue 10, case 1).
//!
//! A property test against the real database: loans are recorded at random moments of a
//! two-and-a-half-month run of nightly settlements (before the first night, between nights, after
//! the nights that settled their months), some of them imported already returned, and open loans
//! are returned back-dated. Between nights, extra fires find no date to settle but loans to
//! accrue, as a fast cron does after an import. Some nights are missed and caught up by the next.
//! In the end the fines and the ledger must equal the oracle's, which knows every loan from the
//! start.
//!
//! One kind of change is left out on purpose: a return back-dated into a month that was already
//! settled. SETTLED fines are history and are never rewritten (CONTRACT §2.4); the audit lists
//! such a loan as a correction for a librarian instead (tests/it/settlement/audit.rs).

use chrono::{Days, NaiveDate};
use finesettle::domain::{LoanTerms, month_start};
use finesettle::settlement;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;

use crate::common::data::{days, load_loans, set_return};
use crate::common::oracle::Model;
use crate::common::settlement::{
    TOKEN, assert_all_succeeded, assert_matches, ctx, dates_for_run, fines, fresh_db_with_loans, ledger, start,
};

/// Nights run by each case: January 1 through mid-March, across two month ends.
const NIGHTS: u64 = 75;

/// Something that happens on the day before a night's settlement, in order.
#[derive(Debug, Clone)]
enum Event {
    /// A loan recorded today: borrowed `back` days ago (possibly before the start date), due
    /// `term` days after that, returned `returned` days after borrowing if that is not in the
    /// future.
    Import {
        night: u64,
        back: u64,
        term: u64,
        returned: Option<u64>,
        fine: i64,
    },
    /// The `pick`-th open loan comes back today, back-dated by up to `back` days within the
    /// month that is still open.
    Return { night: u64, pick: usize, back: u64 },
    /// A fire with no new date to settle: it accrues what was recorded since the last run.
    Fire { night: u64 },
    /// This night's fire never came; the next night catches its date up.
    Skip { night: u64 },
}

impl Event {
    fn night(&self) -> u64 {
        match self {
            Event::Import { night, .. }
            | Event::Return { night, .. }
            | Event::Fire { night }
            | Event::Skip { night } => *night,
        }
    }
}

fn event() -> impl Strategy<Value = Event> {
    let night = 0..NIGHTS;
    prop_oneof![
        5 => (night.clone(), 0u64..120, 0u64..45, proptest::option::of(0u64..100), prop_oneof![Just(50i64), Just(0), 1i64..1_000])
            .prop_map(|(night, back, term, returned, fine)| Event::Import { night, back, term, returned, fine }),
        3 => (night.clone(), 0usize..1_000, 0u64..20).prop_map(|(night, pick, back)| Event::Return { night, pick, back }),
        2 => night.clone().prop_map(|night| Event::Fire { night }),
        1 => night.prop_map(|night| Event::Skip { night }),
    ]
}

/// The number of cases: `PROPTEST_CASES`, or 6 (each is a database and 75 nights).
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(6)
}

#[test]
fn fines_do_not_depend_on_when_loans_were_recorded() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut runner = TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    });
    let scenario = (0u64..1_000, proptest::collection::vec(event(), 10..60));
    runner
        .run(&scenario, |(seed, mut events)| {
            events.sort_by_key(Event::night);
            runtime.block_on(run_scenario(seed, &events));
            Ok(())
        })
        .unwrap();
}

async fn run_scenario(seed: u64, events: &[Event]) {
    // Known before the first night.
    let db = fresh_db_with_loans(seed, 20).await;
    let never = CancellationToken::new();
    let all_dates = days(start(), start() + Days::new(NIGHTS - 1));
    for (night, &today) in all_dates.iter().enumerate() {
        let night = night as u64;
        let mut skip = false;
        for event in events.iter().filter(|e| e.night() == night) {
            match event {
                Event::Import {
                    back,
                    term,
                    returned,
                    fine,
                    ..
                } => import(&db.pool, today, *back, *term, *returned, *fine).await,
                Event::Return { pick, back, .. } => return_open(&db.pool, today, *pick, *back).await,
                Event::Fire { .. } => {
                    settlement::settle_changes(&db.pool, &ctx(TOKEN), &never)
                        .await
                        .expect("a fire with no date accrues the recorded loans");
                }
                Event::Skip { .. } => skip = true,
            }
        }
        if !skip {
            nightly(&db.pool, today).await;
        }
    }
    // Whatever the last nights missed, the next fire catches up.
    nightly(&db.pool, *all_dates.last().unwrap()).await;

    let loans = load_loans(&db.pool).await;
    let model = Model::after(start(), &loans, &all_dates);
    assert_matches(&model, &fines(&db.pool).await, &ledger(&db.pool).await);
}

/// The night's fire: every date without SUCCESS through `today`, as the scheduler plans it.
async fn nightly(pool: &PgPool, today: NaiveDate) {
    let dates = dates_for_run(pool, Some(start()), today, 62).await.unwrap();
    let never = CancellationToken::new();
    let report = settlement::settle_dates(pool, &ctx(TOKEN), &dates, &never, &never, ()).await;
    assert_all_succeeded(&report);
    // What a fire does after its dates: accrue what was recorded while they ran.
    settlement::settle_changes(pool, &ctx(TOKEN), &never).await.unwrap();
}

/// Records a loan today, with dates in the past (or a due date still ahead).
async fn import(pool: &PgPool, today: NaiveDate, back: u64, term: u64, returned: Option<u64>, fine: i64) {
    let borrowed_on = today - Days::new(back);
    let due_on = borrowed_on + Days::new(term);
    let returned_on = returned.map(|r| borrowed_on + Days::new(r)).filter(|r| *r <= today);
    let loan = LoanTerms {
        borrowed_on,
        due_on,
        returned_on,
        daily_fine_cents: fine,
    };
    insert_more_loans(pool, &[loan]).await;
}

/// Returns an open loan today, back-dated at most into the first day of today's month, and never
/// so far back that a fine already accrued would lose every day (that would void it, which the
/// oracle, knowing the return from the start, would never have created).
async fn return_open(pool: &PgPool, today: NaiveDate, pick: usize, back: u64) {
    let open = load_loans(pool).await;
    let open: Vec<(i64, LoanTerms)> = open.into_iter().filter(|(_, l)| l.returned_on.is_none()).collect();
    if open.is_empty() {
        return;
    }
    let (id, loan) = open[pick % open.len()];
    let mut earliest = loan.borrowed_on.max(month_start(today));
    if loan.due_on < today {
        earliest = earliest.max(loan.due_on + Days::new(1));
    }
    let returned_on = (today - Days::new(back)).max(earliest);
    if returned_on <= today {
        set_return(pool, id, returned_on).await;
    }
}

/// [`insert_loans`](crate::common::data::insert_loans) for a database that already has members: one new book per loan.
async fn insert_more_loans(pool: &PgPool, loans: &[LoanTerms]) {
    for loan in loans {
        sqlx::query(
            r#"
            with b as (insert into book (title) values ('imported') returning id)
            insert into loan (member_id, book_id, borrowed_on, due_on, returned_at, returned_on, daily_fine_cents)
            select (select min(id) from member), b.id, $1, $2,
                   ($3::date + time '12:00') at time zone 'Asia/Shanghai', $3, $4
            from b
            "#,
        )
        .bind(loan.borrowed_on)
        .bind(loan.due_on)
        .bind(loan.returned_on)
        .bind(loan.daily_fine_cents)
        .execute(pool)
        .await
        .unwrap();
    }
}

//! The seed as a library call, checked row by row against what was asked for.

use chrono::{Days, NaiveDate};
use finesettle::jobs::Request;
use finesettle::seed::draw::ShapeError;
use finesettle::seed::{Policy, SeedError, SeedOptions, SeedReport, seed};
use finesettle::settlement::Trigger;
use indicatif::ProgressBar;

use crate::common::fixtures::query_number;
use crate::common::{TestApp, spawn_app};

fn options(members: usize, books: usize, loans: usize, seed: u64) -> SeedOptions {
    SeedOptions {
        members,
        books,
        loans,
        overdue_share: 0.3,
        days_back: 60,
        seed,
        reset: false,
    }
}

/// `options` with `reset`: the seed replaces whatever library there is.
fn resetting(options: SeedOptions) -> SeedOptions {
    SeedOptions { reset: true, ..options }
}

async fn run(app: &TestApp, options: &SeedOptions) -> Result<SeedReport, SeedError> {
    let policy = Policy {
        business_tz: app.settings.business_tz,
        daily_fine_cents: app.settings.daily_fine_cents,
    };
    seed(&app.pool, policy, options, &ProgressBar::hidden()).await
}

async fn scalar(app: &TestApp, sql: &'static str) -> i64 {
    sqlx::query_scalar(sql).fetch_one(&app.pool).await.expect(sql)
}

/// A fingerprint of everything the seed chose (not of the instants, which follow the clock).
async fn fingerprint(app: &TestApp) -> String {
    sqlx::query_scalar(
        "select md5((select string_agg(name || email, ',' order by id) from member)
                 || (select string_agg(title || coalesce(isbn, '-'), ',' order by id) from book)
                 || (select string_agg(concat_ws(' ', member_id, book_id, borrowed_on, due_on, returned_on), ','
                                       order by id) from loan))",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap()
}

/// `loan`'s foreign keys as the catalog has them, and whether they are validated.
async fn loan_foreign_keys(app: &TestApp) -> Vec<(String, String, bool)> {
    sqlx::query_as(
        "select conname::text, pg_get_constraintdef(oid), convalidated from pg_constraint
         where conrelid = 'loan'::regclass and contype = 'f' order by conname",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap()
}

#[tokio::test]
async fn a_seed_writes_the_requested_library_with_the_overdue_share() {
    let app = spawn_app().await;
    let today = app.today().await;
    let foreign_keys = loan_foreign_keys(&app).await;
    let report = run(&app, &options(50, 300, 600, 7)).await.unwrap();
    // The keys suspended for the load are back, as they were, and hold for every loan.
    assert_eq!(loan_foreign_keys(&app).await, foreign_keys);
    assert!(foreign_keys.len() == 2 && foreign_keys.iter().all(|(_, _, validated)| *validated));

    assert_eq!(
        (report.members, report.books, report.loans(), report.today),
        (50, 300, 600, today)
    );
    assert_eq!(
        app.row_counts().await[..3],
        [("member".into(), 50), ("book".into(), 300), ("loan".into(), 600)]
    );
    let kinds: (i64, i64, i64, i64) = sqlx::query_as(
        "select count(*) filter (where returned_on is null and due_on < $1),
                count(*) filter (where returned_on is null and due_on >= $1),
                count(*) filter (where returned_on > due_on),
                count(*) filter (where returned_on <= due_on)
         from loan",
    )
    .bind(today)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(
        kinds,
        (180, 60, 90, 270),
        "overdue, on loan, returned late, returned on time"
    );
    let mix = report.mix;
    assert_eq!(
        (mix.overdue, mix.on_loan, mix.returned_late, mix.returned_on_time),
        (180, 60, 90, 270)
    );

    // Every loan inside the window, returned in the past, its return date the business date of
    // its return instant, at the policy's daily fine, never stamped in the future.
    let first_day = today - Days::new(60);
    let misfits: i64 = sqlx::query_scalar(
        "select count(*) from loan
         where borrowed_on < $1 or borrowed_on > $2 or due_on <= borrowed_on
            or returned_on >= $2
            or returned_on <> (returned_at at time zone $3)::date
            or daily_fine_cents <> $4
            or created_at > now()",
    )
    .bind(first_day)
    .bind(today)
    .bind(app.settings.business_tz.name())
    .bind(app.settings.daily_fine_cents)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(misfits, 0);
    assert_eq!(
        report.first_borrowed_on,
        scalar_date(&app, "select min(borrowed_on) from loan").await
    );

    // ISBN-13s with valid check digits, for the copies that have one (most).
    let isbns: Vec<String> = sqlx::query_scalar("select isbn from book where isbn is not null")
        .fetch_all(&app.pool)
        .await
        .unwrap();
    assert!(isbns.len() > 200, "{} of 300 books have an ISBN", isbns.len());
    for isbn in &isbns {
        let sum: u32 = isbn
            .chars()
            .zip([1, 3].into_iter().cycle())
            .map(|(c, w)| c.to_digit(10).expect("digits only") * w)
            .sum();
        assert!(isbn.len() == 13 && sum.is_multiple_of(10), "{isbn}");
    }
    // Some members borrow much more than others.
    let busiest = scalar(
        &app,
        "select max(n) from (select count(*) as n from loan group by member_id) m",
    )
    .await;
    assert!(busiest > 3 * 600 / 50, "the busiest member has {busiest} loans");
}

/// Settles yesterday's business date with a manual fire; returns that date.
async fn settle_yesterday(app: &TestApp) -> NaiveDate {
    let yesterday = app.today().await.pred_opt().unwrap();
    let now = finesettle::store::clock::now(&app.pool).await.unwrap();
    app.job
        .fire(Trigger::Manual, now, Request::date(yesterday))
        .await
        .expect("the run starts");
    yesterday
}

async fn scalar_date(app: &TestApp, sql: &'static str) -> NaiveDate {
    sqlx::query_scalar(sql).fetch_one(&app.pool).await.expect(sql)
}

#[tokio::test]
async fn the_settlement_finds_the_seeded_overdue_loans() {
    let app = spawn_app().await;
    run(&app, &options(40, 400, 800, 11)).await.unwrap();
    let yesterday = settle_yesterday(&app).await;

    // Independently: loans with at least one overdue day in yesterday's month, up to yesterday
    // (an overdue day is after the due date and not after the return date).
    let overdue_loans = "select count(*) from loan
         where greatest(due_on + 1, date_trunc('month', $1::date)::date) <= least($1::date, coalesce(returned_on, $1::date))";
    let expected = query_number(&app.pool, overdue_loans, yesterday).await;
    let fines_of_the_month =
        "select count(*) from fine_record where settle_month = date_trunc('month', $1::date)::date";
    let fines = query_number(&app.pool, fines_of_the_month, yesterday).await;
    assert!(expected > 100, "{expected} loans are overdue");
    assert_eq!(fines, expected);
}

#[tokio::test]
async fn a_library_that_is_not_empty_is_refused_and_reset_replaces_it_but_keeps_job_records() {
    let app = spawn_app().await;
    run(&app, &options(20, 100, 150, 1)).await.unwrap();
    settle_yesterday(&app).await;
    let before = app.row_counts().await;
    assert!(scalar(&app, "select count(*) from fine_record").await > 0);

    let refused = run(&app, &options(5, 5, 5, 2)).await.unwrap_err();
    assert!(
        matches!(refused, SeedError::NotEmpty(counts) if counts.loans == 150),
        "{refused}"
    );
    assert!(refused.to_string().contains("pass --reset"), "{refused}");
    assert_eq!(app.row_counts().await, before, "a refused seed changes nothing");

    run(&app, &resetting(options(30, 120, 200, 2))).await.unwrap();
    let after = app.row_counts().await;
    let count = |counts: &[(String, i64)], table: &str| counts.iter().find(|(t, _)| t == table).unwrap().1;
    assert_eq!(
        (count(&after, "member"), count(&after, "book"), count(&after, "loan")),
        (30, 120, 200)
    );
    assert_eq!((count(&after, "fine_record"), count(&after, "ledger_entry")), (0, 0));
    assert_eq!(
        count(&after, "task_execution"),
        count(&before, "task_execution"),
        "job records are kept"
    );
    assert_eq!(count(&after, "task_lock"), count(&before, "task_lock"));
    assert_eq!(scalar(&app, "select min(id) from member").await, 1, "ids restart");
}

#[tokio::test]
async fn the_same_seed_gives_the_same_library_and_another_seed_another() {
    let app = spawn_app().await;
    run(&app, &options(30, 100, 200, 5)).await.unwrap();
    let first = fingerprint(&app).await;
    run(&app, &resetting(options(30, 100, 200, 5))).await.unwrap();
    assert_eq!(fingerprint(&app).await, first);
    run(&app, &resetting(options(30, 100, 200, 6))).await.unwrap();
    assert_ne!(fingerprint(&app).await, first);
}

#[tokio::test]
async fn a_shape_that_cannot_exist_is_refused_before_anything_is_written() {
    let app = spawn_app().await;
    let before = app.row_counts().await;
    // 40% of 1,000 loans are open (30% overdue, 10% on loan): 400 copies needed.
    let refused = run(&app, &options(10, 399, 1_000, 1)).await.unwrap_err();
    assert!(
        matches!(
            refused,
            SeedError::Shape(ShapeError::TooFewBooks {
                open: 400,
                books: 399,
                ..
            })
        ),
        "{refused}"
    );
    assert!(refused.to_string().contains("--books 400"), "{refused}");
    let refused = run(
        &app,
        &SeedOptions {
            overdue_share: 1.2,
            ..options(10, 10, 10, 1)
        },
    )
    .await
    .unwrap_err();
    assert!(matches!(refused, SeedError::Shape(ShapeError::Share(_))), "{refused}");
    assert_eq!(app.row_counts().await, before);
}

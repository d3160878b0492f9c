//! An operator's ordinary day (issue 10, cases 1 and 2): loans imported with past dates after
//! their months were settled, and an operator's run of a later date, through the API and the
//! job as the scheduler fires it.

use std::time::Duration;

use chrono::{Days, NaiveDate};
use finesettle::domain::{LoanTerms, fine_for_month, is_final, month_end, month_start};
use finesettle::jobs::{Refused, Request, RunReport};
use finesettle::settlement::Trigger;
use serde_json::json;

use crate::common::checks::eventually;
use crate::common::fixtures::query_number;
use crate::common::{TestApp, spawn_app_with};

const JOB: &str = "/api/v1/jobs/settle-fines";

/// An app whose job starts `start_days_ago` and may settle every date in one fire, with no
/// at-least hold, so that consecutive fires in a test are not answered "held".
async fn app_started(start_days_ago: u64) -> TestApp {
    let probe = spawn_app_with(|_| {}).await;
    let today = probe.today().await;
    drop(probe);
    spawn_app_with(|s| {
        s.job.settle_start_date = Some(today - Days::new(start_days_ago));
        s.job.backfill_max_days = 400;
        s.job.lock_at_least_for = Duration::ZERO;
    })
    .await
}

/// A scheduled fire for the night that settles yesterday, as the cron would start it.
async fn cron_fire(app: &TestApp) -> Result<RunReport, Refused> {
    // A fire started through the API may still be releasing its lock after its last date reads
    // SUCCESS; the night's fire comes after it, not during it (which would be refused as busy).
    app.job.idle().await;
    let now = finesettle::store::clock::now(&app.pool).await.unwrap();
    let target = app.today().await - Days::new(1);
    app.job.fire(Trigger::Cron, now, Request::CatchUp { target }).await
}

/// The dates from `from` through `to` without a SUCCESS.
async fn unsettled(app: &TestApp, from: NaiveDate, to: NaiveDate) -> Vec<NaiveDate> {
    finesettle::store::executions::unsettled_between(&app.pool, &"settle-fines".into(), from, to, 10_000)
        .await
        .unwrap()
}

/// `(settle_month, overdue_days, amount_cents, status, charged_cents)` of every fine of a loan.
async fn fines_of(app: &TestApp, loan_id: i64) -> Vec<(NaiveDate, i32, i64, String, Option<i64>)> {
    sqlx::query_as(
        "select f.settle_month, f.overdue_days, f.amount_cents, f.status, \
                (select sum(amount_cents)::bigint from ledger_entry e where e.fine_id = f.id and e.kind = 'CHARGE') \
         from fine_record f where f.loan_id = $1 order by f.settle_month",
    )
    .bind(loan_id)
    .fetch_all(&app.pool)
    .await
    .unwrap()
}

/// What CONTRACT §1 says the loan owes, month by month, once `settled_through` is settled.
fn owed(
    loan: &LoanTerms,
    start: NaiveDate,
    settled_through: NaiveDate,
) -> Vec<(NaiveDate, i32, i64, String, Option<i64>)> {
    let mut months = Vec::new();
    let mut month = month_start(start);
    while month <= settled_through {
        if let Some(fine) = fine_for_month(loan, month, settled_through.min(month_end(month))) {
            let settled = is_final(month, loan.returned_on, settled_through);
            let status = if settled { "SETTLED" } else { "PENDING" };
            months.push((
                month,
                fine.overdue_days,
                fine.amount_cents,
                status.to_owned(),
                settled.then_some(fine.amount_cents),
            ));
        }
        month = month_end(month) + Days::new(1);
    }
    months
}

#[tokio::test]
async fn loans_imported_after_their_months_were_settled_are_fined_at_the_next_fire() {
    let app = app_started(120).await;
    let today = app.today().await;
    let yesterday = today - Days::new(1);
    let start = app.settings.job.settle_start_date.unwrap();
    cron_fire(&app).await.expect("the first night settles every date");
    assert!(unsettled(&app, start, yesterday).await.is_empty());
    // Every date is settled: a fire now has nothing to do.
    assert!(matches!(cron_fire(&app).await, Err(Refused::NothingToDo)));

    // An import: borrowed 70 days ago, due 65 days ago, still out. And a loan returned 20 days
    // ago, recorded only now.
    let member = app.create_member("Imported Reader", "imported@example.org").await;
    let member_id = member["id"].as_i64().unwrap();
    let book_a = app.create_book("Old Loan").await["id"].as_i64().unwrap();
    let book_b = app.create_book("Late Return").await["id"].as_i64().unwrap();
    let open = app
        .create_loan_from(member_id, book_a, today - Days::new(70), today - Days::new(65))
        .await;
    let returned = app
        .create_loan_from(member_id, book_b, today - Days::new(60), today - Days::new(50))
        .await;
    let returned_on = today - Days::new(20);
    let returned_at = format!("{returned_on}T12:00:00+08:00");
    let reply = app
        .post(
            &format!("/api/v1/loans/{}/return", returned["id"]),
            json!({ "returned_at": returned_at }),
        )
        .await;
    reply.ok(200);

    // The next fire has no date to settle, but it accrues and settles what was recorded.
    let report = cron_fire(&app).await.expect("recorded loans give the fire work");
    assert!(report.walk.outcomes.is_empty(), "no business date to settle");

    for (loan, terms) in [
        (
            &open,
            LoanTerms {
                borrowed_on: today - Days::new(70),
                due_on: today - Days::new(65),
                returned_on: None,
                daily_fine_cents: 50,
            },
        ),
        (
            &returned,
            LoanTerms {
                borrowed_on: today - Days::new(60),
                due_on: today - Days::new(50),
                returned_on: Some(returned_on),
                daily_fine_cents: 50,
            },
        ),
    ] {
        let id = loan["id"].as_i64().unwrap();
        let expected = owed(&terms, start, yesterday);
        assert!(
            expected.iter().filter(|f| f.3 == "SETTLED").count() >= 2,
            "the loan spans ended months: {expected:?}"
        );
        assert_eq!(fines_of(&app, id).await, expected, "loan {id}");
    }
    // The member's balance is what the settled fines charged.
    let balance = app.get(&format!("/api/v1/members/{member_id}")).await.ok(200)["balance_cents"]
        .as_i64()
        .unwrap();
    let charges =
        "select coalesce(sum(amount_cents), 0)::bigint from ledger_entry where member_id = $1 and kind = 'CHARGE'";
    let charged = query_number(&app.pool, charges, member_id).await;
    assert!(charged > 0);
    assert_eq!(balance, charged);

    // And a second fire changes nothing: the queue is empty.
    let before = app.row_counts().await;
    assert!(matches!(cron_fire(&app).await, Err(Refused::NothingToDo)));
    assert_eq!(app.row_counts().await, before);
}

#[tokio::test]
async fn an_operators_run_of_a_later_date_leaves_no_gap() {
    let app = app_started(30).await;
    let today = app.today().await;
    let start = today - Days::new(30);
    // Settled through today-20, as a backfill would.
    let reply = app
        .post(
            &format!("{JOB}/backfill"),
            json!({ "from": start, "to": today - Days::new(20) }),
        )
        .await;
    reply.ok(202);
    wait_settled(&app, start, today - Days::new(20)).await;

    // The operator runs today-5: the run settles today-19 .. today-6 first, then today-5.
    let reply = run_when_idle(&app, today - Days::new(5)).await;
    let execution = reply.ok(202);
    assert_eq!(
        execution["business_date"],
        (today - Days::new(19)).to_string(),
        "the run begins with the first date without SUCCESS"
    );
    wait_settled(&app, start, today - Days::new(5)).await;

    // The next scheduled fire goes on from there; no date of the range is left without SUCCESS.
    cron_fire(&app).await.expect("the night's fire settles the rest");
    assert!(unsettled(&app, start, today - Days::new(1)).await.is_empty());
    let since_start = "select count(*) from task_execution where status = 'SUCCESS' and business_date >= $1";
    let successes = query_number(&app.pool, since_start, start).await;
    assert_eq!(successes, 30, "one SUCCESS per date");

    // A date before the start date is refused, naming the start date.
    let reply = app
        .post(&format!("{JOB}/runs"), json!({ "business_date": start - Days::new(1) }))
        .await;
    let problem = reply.problem(422);
    assert!(problem.to_string().contains(&start.to_string()), "{problem}");
}

/// An operator's run of `date`, sent again while the backfill before it is still finishing its
/// fire (409 `job_running`, or `job_starting` while a fire takes the lock), as an operator would.
async fn run_when_idle(app: &TestApp, date: NaiveDate) -> crate::common::Reply {
    for _ in 0..2400 {
        let reply = app.post(&format!("{JOB}/runs"), json!({ "business_date": date })).await;
        if reply.status.as_u16() != 409
            || !["job_running", "job_starting"].contains(&reply.body["code"].as_str().unwrap_or_default())
        {
            return reply;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the job stayed busy for 120 s");
}

/// Waits until every date from `from` through `to` has a SUCCESS.
async fn wait_settled(app: &TestApp, from: NaiveDate, to: NaiveDate) {
    let every_date = format!("a SUCCESS of every date from {from} through {to}");
    eventually(&every_date, Duration::from_secs(120), async || {
        unsettled(app, from, to).await.is_empty()
    })
    .await;
}

//! The backfill walk: which dates a run takes, stopping between dates, row locks held by others,
//! and the execution records it leaves.

use chrono::NaiveDate;
use finesettle::domain::FencingToken;
use finesettle::settlement::{self, DateStatus, SettleError, records};
use finesettle::store::PageRequest;
use tokio_util::sync::CancellationToken;

use crate::common::data::{days, set_return, ymd};
use crate::common::fixtures::open_transaction;
use crate::common::settlement::{
    TASK, TOKEN, assert_all_succeeded, ctx, dates_for_manual_run, dates_for_run, fresh_db, fresh_db_with_loans, walk,
};

#[tokio::test]
async fn a_run_takes_every_date_without_success_from_the_start_oldest_first_capped() {
    let db = fresh_db().await;
    let target = ymd(2026, 3, 31);
    // From the configured start date.
    let first = dates_for_run(&db.pool, Some(ymd(2026, 3, 1)), target, 62)
        .await
        .unwrap();
    assert_eq!(first, days(ymd(2026, 3, 1), target));
    // Capped: the rest waits for the next run.
    let capped = dates_for_run(&db.pool, Some(ymd(2026, 3, 1)), target, 10)
        .await
        .unwrap();
    assert_eq!(capped, days(ymd(2026, 3, 1), ymd(2026, 3, 10)));

    // Given newest first, still walked oldest first.
    let mut reversed = capped.clone();
    reversed.reverse();
    let report = walk(&db.pool, &reversed).await;
    assert_all_succeeded(&report);
    assert_eq!(report.outcomes.iter().map(|o| o.date).collect::<Vec<_>>(), capped);
    assert_eq!(
        records::last_success(&db.pool, &TASK).await.unwrap(),
        Some(ymd(2026, 3, 10))
    );

    // The start date still matters after a SUCCESS: every earlier date without one comes first.
    let mut next = days(ymd(2026, 2, 20), ymd(2026, 2, 28));
    next.extend(days(ymd(2026, 3, 11), target));
    assert_eq!(
        dates_for_run(&db.pool, Some(ymd(2026, 2, 20)), target, 62)
            .await
            .unwrap(),
        next
    );
    let settled = records::settled_among(&db.pool, &TASK, &[ymd(2026, 3, 10), ymd(2026, 3, 11)])
        .await
        .unwrap();
    assert_eq!(settled, [ymd(2026, 3, 10)].into_iter().collect());
}

#[tokio::test]
async fn without_a_configured_start_the_first_planned_date_is_recorded_and_kept() {
    let db = fresh_db().await;
    // The first plan ever records its target as the start date ...
    assert_eq!(
        dates_for_run(&db.pool, None, ymd(2026, 3, 5), 62).await.unwrap(),
        [ymd(2026, 3, 5)]
    );
    assert_eq!(
        finesettle::store::start_date::recorded(&db.pool, &TASK).await.unwrap(),
        Some(ymd(2026, 3, 5))
    );
    // ... and later plans start there, whatever their target: no date is lost to a later fire.
    assert_eq!(
        dates_for_run(&db.pool, None, ymd(2026, 3, 8), 62).await.unwrap(),
        days(ymd(2026, 3, 5), ymd(2026, 3, 8))
    );
    // An operator's first date before it is refused, not silently accrued before the start.
    let refused = dates_for_manual_run(&db.pool, None, &[ymd(2026, 3, 1)]).await;
    assert!(
        matches!(refused, Err(finesettle::jobs::PlanError::BeforeStart(b)) if b.start == ymd(2026, 3, 5)),
        "{refused:?}"
    );
}

#[tokio::test]
async fn a_gap_behind_later_successes_is_planned_first() {
    let db = fresh_db().await;
    // Settled through 03-05 and, out of order, 03-12 (an operator's run of a later date).
    assert_all_succeeded(&walk(&db.pool, &days(ymd(2026, 3, 1), ymd(2026, 3, 5))).await);
    assert_all_succeeded(&walk(&db.pool, &[ymd(2026, 3, 12)]).await);
    let start = Some(ymd(2026, 3, 1));

    // The next scheduled run fills the gap, then goes on past 03-12.
    let mut expected = days(ymd(2026, 3, 6), ymd(2026, 3, 11));
    expected.extend(days(ymd(2026, 3, 13), ymd(2026, 3, 14)));
    assert_eq!(
        dates_for_run(&db.pool, start, ymd(2026, 3, 14), 62).await.unwrap(),
        expected
    );
    // An operator's run of 03-14 settles every earlier date without SUCCESS first; one of 03-12
    // has nothing to do.
    assert_eq!(
        dates_for_manual_run(&db.pool, start, &[ymd(2026, 3, 14)])
            .await
            .unwrap(),
        [
            &days(ymd(2026, 3, 6), ymd(2026, 3, 11))[..],
            &[ymd(2026, 3, 13), ymd(2026, 3, 14)]
        ]
        .concat()
    );
    assert!(
        dates_for_manual_run(&db.pool, start, &[ymd(2026, 3, 12)])
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn a_stop_request_lets_the_current_date_finish_and_leaves_the_rest() {
    let db = fresh_db_with_loans(9, 100).await;
    let dates = days(ymd(2026, 3, 1), ymd(2026, 3, 5));
    let stop = CancellationToken::new();
    let mut seen = Vec::new();
    let report = settlement::settle_dates(
        &db.pool,
        &ctx(TOKEN),
        &dates,
        &stop,
        &CancellationToken::new(),
        |outcome: &settlement::DateOutcome| {
            seen.push(outcome.date);
            // A shutdown arrives while the second date runs.
            if seen.len() == 2 {
                stop.cancel();
            }
        },
    )
    .await;
    assert_eq!(seen, dates[..2]);
    assert_eq!(report.succeeded(), 2);
    assert_eq!(report.not_run, dates[2..]);
    assert!(report.stopped_at().is_none(), "stopped cleanly, not by a failure");
    assert!(!report.completed());
    assert_eq!(records::last_success(&db.pool, &TASK).await.unwrap(), Some(dates[1]));
}

#[tokio::test]
async fn a_fine_locked_by_someone_else_is_skipped_and_finalised_by_the_next_date() {
    let db = fresh_db_with_loans(10, 150).await;
    assert_all_succeeded(&walk(&db.pool, &days(ymd(2026, 3, 20), ymd(2026, 3, 30))).await);
    // An open loan's return is corrected to its due date: its PENDING March fine is final (and
    // will be void) on March 31, and the accrual of March 31 no longer looks at it.
    let (fine_id, loan_id, due_on): (i64, i64, chrono::NaiveDate) = sqlx::query_as(
        "select f.id, l.id, l.due_on from fine_record f join loan l on l.id = f.loan_id \
         where f.status = 'PENDING' and f.settle_month = '2026-03-01' and l.returned_on is null order by f.id limit 1",
    )
    .fetch_one(&db.pool)
    .await
    .unwrap();
    set_return(&db.pool, loan_id, due_on).await;

    // Another transaction (a void being decided, say) holds the fine's row lock over the month end.
    let other = open_transaction(&db.pool, "select 1 from fine_record where id = $1 for update", fine_id).await;
    assert_all_succeeded(&walk(&db.pool, &[ymd(2026, 3, 31)]).await);
    let pending: Vec<i64> =
        sqlx::query_scalar("select id from fine_record where settle_month = '2026-03-01' and status = 'PENDING'")
            .fetch_all(&db.pool)
            .await
            .unwrap();
    assert_eq!(
        pending,
        [fine_id],
        "the locked fine was skipped, not waited for; every other one settled"
    );
    other.rollback().await.unwrap();

    // Still final the next day: finalised then (void, as it has no overdue day left).
    assert_all_succeeded(&walk(&db.pool, &[ymd(2026, 4, 1)]).await);
    let (status, reason, entries): (String, Option<String>, i64) = sqlx::query_as(
        "select status, void_reason, (select count(*) from ledger_entry where fine_id = f.id) \
         from fine_record f where id = $1",
    )
    .bind(fine_id)
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert_eq!(
        (status.as_str(), reason.as_deref(), entries),
        ("VOID", Some("no overdue days after return correction"), 0)
    );
}

#[tokio::test]
async fn executions_are_listed_newest_first_with_the_spec_fields() {
    let db = fresh_db().await;
    let dates = days(ymd(2026, 3, 1), ymd(2026, 3, 5));
    assert_all_succeeded(&walk(&db.pool, &dates).await);

    let first = records::list(&db.pool, &TASK, PageRequest { after: 0, limit: 3 })
        .await
        .unwrap();
    assert_eq!(first.len(), 4, "one more than the page, to know another follows");
    let newest = &first[0];
    assert_eq!(newest.business_date, ymd(2026, 3, 5));
    assert_eq!(
        (
            newest.task_name.as_str(),
            newest.trigger.as_str(),
            newest.instance_id.as_str(),
            newest.status.as_str()
        ),
        (TASK.as_str(), "manual", "test-replica", "SUCCESS")
    );
    assert_eq!(newest.fencing_token, FencingToken(TOKEN));
    assert!(newest.finished_at.unwrap() >= newest.started_at);
    assert_eq!(newest.error, None);

    let rest = records::list(
        &db.pool,
        &TASK,
        PageRequest {
            after: first[2].id,
            limit: 3,
        },
    )
    .await
    .unwrap();
    let listed: Vec<_> = first[..3].iter().chain(&rest).map(|r| r.business_date).collect();
    let mut expected = dates.clone();
    expected.reverse();
    assert_eq!(listed, expected);
    assert!(
        records::list(&db.pool, &"another-task".into(), PageRequest { after: 0, limit: 3 })
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(records::find(&db.pool, newest.id).await.unwrap().as_ref(), Some(newest));
    assert_eq!(
        settlement::records::last_success(&db.pool, &TASK).await.unwrap(),
        Some(ymd(2026, 3, 5))
    );
}

/// The check constraint keeps unknown statuses out of `task_execution`; if one got in anyway
/// (a constraint dropped by hand, a newer version's status), reading the row is an error the
/// caller can report, not a panic.
#[tokio::test]
async fn an_execution_with_an_unknown_status_reads_as_a_decode_error() {
    let db = fresh_db().await;
    sqlx::query("alter table task_execution drop constraint task_execution_status_known")
        .execute(&db.pool)
        .await
        .unwrap();
    let id: i64 = sqlx::query_scalar(
        "insert into task_execution (task_name, business_date, trigger, instance_id, fencing_token, status, finished_at) \
         values ($1, date '2026-03-01', 'cron', 'test', $2, 'PAUSED', now()) returning id",
    )
    .bind(TASK)
    .bind(TOKEN)
    .fetch_one(&db.pool)
    .await
    .unwrap();
    let read = records::find(&db.pool, id).await;
    assert!(matches!(read, Err(sqlx::Error::ColumnDecode { .. })), "{read:?}");
}

/// Issue 19: a walk asked for dates that have not ended by the database's clock (a plan made
/// before a clock jump, a caller that skipped the planner) settles the ended ones and stops at the
/// first that has not, recording nothing for it. The check is in the date's fenced transaction,
/// so no caller gets past it.
#[tokio::test]
async fn a_walk_stops_at_a_date_that_has_not_ended_by_the_database_clock_and_records_nothing() {
    let db = fresh_db().await;
    let ctx = ctx(TOKEN);
    let now = finesettle::store::clock::now(&db.pool).await.unwrap();
    let today = finesettle::domain::business_date(now, ctx.business_tz);
    let yesterday = today.pred_opt().unwrap();
    let tomorrow = today.succ_opt().unwrap();

    let report = walk(&db.pool, &[yesterday, today, tomorrow]).await;

    let statuses: Vec<_> = report.outcomes.iter().map(|o| (o.date, o.status)).collect();
    assert_eq!(
        statuses,
        [(yesterday, DateStatus::Success), (today, DateStatus::NotEnded)]
    );
    assert_eq!(report.not_run, [tomorrow], "the walk stops at the first date not ended");
    let stopped = report.stopped_at().expect("stopped");
    assert_eq!(stopped.execution_id, None);
    assert!(
        stopped
            .error
            .as_deref()
            .unwrap()
            .contains("has not ended by the database's clock"),
        "{stopped:?}"
    );
    let recorded: Vec<NaiveDate> = sqlx::query_scalar("select business_date from task_execution order by id")
        .fetch_all(&db.pool)
        .await
        .unwrap();
    assert_eq!(recorded, [yesterday], "no execution row for a date that has not ended");

    // The per-date procedure checks too, at the moment of its transaction.
    let mut tx = db.pool.begin().await.unwrap();
    let never = CancellationToken::new();
    let refused = settlement::settle_date(&mut tx, &ctx, today, &never).await;
    assert!(
        matches!(refused, Err(SettleError::NotEnded { date, .. }) if date == today),
        "{refused:?}"
    );
}

//! Issue test 8: a date that fails midway is recorded FAILED, leaves nothing half-done, and is
//! redone by the next run. Also a date abandoned between batches.

use std::time::Duration;

use finesettle::settlement::{self, DateStatus};
use tokio_util::sync::CancellationToken;

use crate::common::data::{days, load_loans, ymd};
use crate::common::oracle::Model;
use crate::common::settlement::{
    TOKEN, assert_all_succeeded, assert_matches, ctx, dates_for_run, executions_of, fines, fresh_db_with_loans, ledger,
    row_versions, walk,
};
use crate::common::triggers::create_trigger;

const FAULT: &str = "test fault: the ledger refuses every entry";

#[tokio::test]
async fn a_date_refused_midway_leaves_nothing_and_is_redone_by_the_next_run() {
    let db = fresh_db_with_loans(5, 250).await;
    let loans = load_loans(&db.pool).await;
    let start = ymd(2026, 2, 1);
    let target = ymd(2026, 4, 10);
    assert_all_succeeded(&walk(&db.pool, &days(start, ymd(2026, 3, 30))).await);
    let before = row_versions(&db.pool).await;

    // The database refuses the CHARGE inserts: March 31 accrues its fines, then fails while
    // settling them, in the same statement that already moved them to SETTLED.
    create_trigger(
        &db.pool,
        "test_refuse_entry",
        "before insert on ledger_entry for each row",
        &format!("raise exception '{FAULT}';"),
    )
    .await;

    let report = walk(&db.pool, &days(ymd(2026, 3, 31), target)).await;
    assert_eq!(report.outcomes.len(), 1, "the walk stops at the failed date");
    let failed = report.stopped_at().expect("a failed date");
    assert_eq!((failed.date, failed.status), (ymd(2026, 3, 31), DateStatus::Failed));
    assert!(failed.error.as_deref().unwrap().contains(FAULT), "{:?}", failed.error);
    assert_eq!(
        report.not_run,
        days(ymd(2026, 4, 1), target),
        "later dates wait for the next run"
    );
    assert!(!report.completed());

    // Recorded FAILED with the database's error; not a single fine or entry changed.
    let records = executions_of(&db.pool, ymd(2026, 3, 31)).await;
    assert_eq!(records.len(), 1);
    let (status, rows, error, token) = &records[0];
    assert_eq!((status.as_str(), *rows, *token), ("FAILED", 0, TOKEN));
    assert!(error.as_deref().unwrap().contains(FAULT), "{error:?}");
    assert_eq!(
        row_versions(&db.pool).await,
        before,
        "the failed date left writes behind"
    );

    // The fault is repaired; the next run resumes at the failed date and finishes the range.
    sqlx::raw_sql("drop trigger test_refuse_entry on ledger_entry; drop function test_refuse_entry()")
        .execute(&db.pool)
        .await
        .unwrap();
    let next = dates_for_run(&db.pool, Some(start), target, 62).await.unwrap();
    assert_eq!(next, days(ymd(2026, 3, 31), target));
    assert_all_succeeded(&walk(&db.pool, &next).await);

    let model = Model::after(crate::common::settlement::start(), &loans, &days(start, target));
    assert_matches(&model, &fines(&db.pool).await, &ledger(&db.pool).await);
    let statuses: Vec<String> = executions_of(&db.pool, ymd(2026, 3, 31))
        .await
        .into_iter()
        .map(|r| r.0)
        .collect();
    assert_eq!(statuses, ["FAILED", "SUCCESS"]);
}

#[tokio::test]
async fn a_date_stopped_between_batches_is_rolled_back_and_recorded_abandoned() {
    let db = fresh_db_with_loans(6, 200).await;
    assert_all_succeeded(&walk(&db.pool, &days(ymd(2026, 3, 1), ymd(2026, 3, 9))).await);
    let before = row_versions(&db.pool).await;

    // Slow every fine write down, so that the date is still in its batches when it is stopped.
    create_trigger(
        &db.pool,
        "test_slow_fine",
        "before insert or update on fine_record for each row",
        "perform pg_sleep(0.02); return new;",
    )
    .await;

    // Stop (as a lost lease would) as soon as the date's execution shows RUNNING.
    let abort = CancellationToken::new();
    let watcher = {
        let (pool, abort) = (db.pool.clone(), abort.clone());
        tokio::spawn(async move {
            loop {
                let running: i64 = sqlx::query_scalar("select count(*) from task_execution where status = 'RUNNING'")
                    .fetch_one(&pool)
                    .await
                    .unwrap();
                if running > 0 {
                    abort.cancel();
                    return;
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        })
    };
    let mut one_row_batches = ctx(TOKEN);
    one_row_batches.batch_size = 1;
    let dates = [ymd(2026, 3, 10), ymd(2026, 3, 11)];
    let report = settlement::settle_dates(
        &db.pool,
        &one_row_batches,
        &dates,
        &CancellationToken::new(),
        &abort,
        (),
    )
    .await;
    watcher.await.unwrap();

    let stopped = report.stopped_at().expect("the date was stopped");
    assert_eq!((stopped.date, stopped.status), (dates[0], DateStatus::Abandoned));
    assert_eq!(report.not_run, [dates[1]]);
    let records = executions_of(&db.pool, dates[0]).await;
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].0, "FAILED");
    assert!(
        records[0].2.as_deref().unwrap().starts_with("abandoned: "),
        "{:?}",
        records[0].2
    );
    assert_eq!(
        row_versions(&db.pool).await,
        before,
        "the abandoned date left writes behind"
    );
}

//! A holder whose fencing token is no longer current writes nothing; its records are closed by
//! the holder that replaced it.

use finesettle::domain::FencingToken;
use finesettle::settlement::{self, DateStatus, SettleError, records};
use tokio_util::sync::CancellationToken;

use crate::common::data::{days, ymd};
use crate::common::settlement::{
    TASK, TOKEN, assert_all_succeeded, ctx, executions_of, fresh_db, fresh_db_with_loans, row_versions, walk,
};
use crate::common::triggers::create_trigger;

#[tokio::test]
async fn a_stale_token_writes_nothing() {
    let db = fresh_db_with_loans(7, 150).await;
    assert_all_succeeded(&walk(&db.pool, &days(ymd(2026, 3, 1), ymd(2026, 3, 10))).await);
    let before = row_versions(&db.pool).await;
    let never = CancellationToken::new();
    let stale = ctx(TOKEN - 1);

    // Through the walk: refused at the first record, nothing recorded, the walk stops.
    let dates = days(ymd(2026, 3, 11), ymd(2026, 3, 13));
    let report = settlement::settle_dates(&db.pool, &stale, &dates, &never, &never, ()).await;
    assert_eq!(report.outcomes.len(), 1);
    let o = &report.outcomes[0];
    assert_eq!((o.status, o.execution_id), (DateStatus::Fenced, None));
    assert!(o.error.as_deref().unwrap().starts_with("fenced: "), "{:?}", o.error);
    assert!(report.fenced());
    assert_eq!(report.not_run, dates[1..]);
    for &d in &dates {
        assert!(executions_of(&db.pool, d).await.is_empty());
    }

    // The procedure itself: refused by its first statement.
    let mut tx = db.pool.begin().await.unwrap();
    let refused = settlement::settle_date(&mut tx, &stale, dates[0], &never).await;
    assert!(matches!(refused, Err(SettleError::Fenced(_))), "{refused:?}");
    tx.rollback().await.unwrap();

    // And the record writes.
    assert_eq!(
        records::abandon_stale(&db.pool, &TASK, FencingToken(TOKEN - 1))
            .await
            .unwrap(),
        0
    );
    assert_eq!(row_versions(&db.pool).await, before);
}

#[tokio::test]
async fn a_lock_taken_over_mid_date_leaves_the_record_to_the_new_holder() {
    let db = fresh_db_with_loans(8, 150).await;
    let before = row_versions(&db.pool).await;
    // The lock passes to token 8 right after this run recorded its date as RUNNING (as when the
    // holder pauses past its lease there and another replica takes over).
    create_trigger(
        &db.pool,
        "test_take_over",
        "after insert on task_execution for each row",
        "update task_lock set fencing_token = fencing_token + 1 where task_name = new.task_name; return new;",
    )
    .await;

    let date = ymd(2026, 3, 20);
    let report = walk(&db.pool, &[date]).await;
    let o = &report.outcomes[0];
    assert_eq!(o.status, DateStatus::Fenced, "{:?}", o.error);
    let execution_id = o.execution_id.expect("the record was started");
    assert_eq!(row_versions(&db.pool).await, before, "a fenced date wrote");
    // The fence refused the FAILED mark too: the old holder can no longer write anything.
    assert_eq!(executions_of(&db.pool, date).await[0].0, "RUNNING");

    // The new holder closes it right after winning.
    sqlx::raw_sql("drop trigger test_take_over on task_execution; drop function test_take_over()")
        .execute(&db.pool)
        .await
        .unwrap();
    assert_eq!(
        records::abandon_stale(&db.pool, &TASK, FencingToken(TOKEN + 1))
            .await
            .unwrap(),
        1
    );
    let row = records::find(&db.pool, execution_id).await.unwrap().unwrap();
    assert_eq!(row.status.as_str(), "FAILED");
    assert_eq!(
        row.error.as_deref(),
        Some("abandoned: the lock passed to fencing token 8")
    );
    assert!(row.finished_at.is_some());
    assert_eq!(row.fencing_token, FencingToken(TOKEN));
}

#[tokio::test]
async fn abandon_stale_closes_only_running_records_of_older_tokens() {
    let db = fresh_db().await;
    let date = ymd(2026, 3, 1);
    // Executions of tokens 5, 6 (RUNNING) and 7 (RUNNING, the current holder's own) and a
    // finished one of token 5.
    sqlx::query(
        "insert into task_execution (task_name, business_date, trigger, instance_id, fencing_token, status, finished_at)
         values ($1, $2, 'cron', 'old-replica', 5, 'RUNNING', null),
                ($1, $2, 'cron', 'old-replica', 6, 'RUNNING', null),
                ($1, $2, 'cron', 'old-replica', 7, 'RUNNING', null),
                ($1, $2, 'cron', 'old-replica', 5, 'SUCCESS', now())",
    )
    .bind(TASK)
    .bind(date)
    .execute(&db.pool)
    .await
    .unwrap();
    assert_eq!(
        records::abandon_stale(&db.pool, &TASK, FencingToken(TOKEN))
            .await
            .unwrap(),
        2
    );
    let rows = executions_of(&db.pool, date).await;
    let summary: Vec<(&str, i64, Option<&str>)> = rows.iter().map(|r| (r.0.as_str(), r.3, r.2.as_deref())).collect();
    let abandoned = Some("abandoned: the lock passed to fencing token 7");
    assert_eq!(
        summary,
        [
            ("FAILED", 5, abandoned),
            ("FAILED", 6, abandoned),
            ("RUNNING", 7, None),
            ("SUCCESS", 5, None)
        ]
    );
    // Idempotent.
    assert_eq!(
        records::abandon_stale(&db.pool, &TASK, FencingToken(TOKEN))
            .await
            .unwrap(),
        0
    );
}

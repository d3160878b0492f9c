//! The rows a walk leaves equal the oracle's, including after back-dated returns.

use finesettle::domain::{FineStatus, LoanTerms};

use crate::common::data::{days, load_loans, set_return, ymd};
use crate::common::oracle::Model;
use crate::common::settlement::{
    BATCH, TASK, assert_all_succeeded, assert_matches, fines, fresh_db_with_loans, ledger, start, walk,
};

#[tokio::test]
async fn an_in_order_walk_matches_the_oracle() {
    let db = fresh_db_with_loans(1, 300).await;
    let loans = load_loans(&db.pool).await;
    let dates = days(ymd(2026, 1, 20), ymd(2026, 4, 20));

    let report = walk(&db.pool, &dates).await;
    assert_all_succeeded(&report);
    assert_eq!(report.outcomes.len(), dates.len());

    let model = Model::after(start(), &loans, &dates);
    assert_matches(&model, &fines(&db.pool).await, &ledger(&db.pool).await);

    // The data exercises what it should: several batches per step, every status a walk can
    // produce, zero-amount fines (settled without a CHARGE), fines in every month of the range.
    assert!(
        model.count(FineStatus::Settled) > 2 * BATCH as usize,
        "{}",
        model.count(FineStatus::Settled)
    );
    assert!(model.count(FineStatus::Pending) > 0);
    assert!(
        model
            .fines()
            .iter()
            .any(|f| f.status == "SETTLED" && f.amount_cents == 0)
    );
    for month in [ymd(2026, 1, 1), ymd(2026, 2, 1), ymd(2026, 3, 1), ymd(2026, 4, 1)] {
        assert!(
            model.fines().iter().any(|f| f.settle_month == month),
            "no fine in {month}"
        );
    }
    // December had overdue days, but months before the first date are never accrued.
    assert!(model.fines().iter().all(|f| f.settle_month >= ymd(2026, 1, 1)));

    // Each date: one SUCCESS whose affected_rows is what the walk reported.
    let recorded: Vec<(chrono::NaiveDate, i64)> = sqlx::query_as(
        "select business_date, affected_rows from task_execution where task_name = $1 and status = 'SUCCESS' \
         order by business_date",
    )
    .bind(TASK)
    .fetch_all(&db.pool)
    .await
    .unwrap();
    let reported: Vec<_> = report.outcomes.iter().map(|o| (o.date, o.rows)).collect();
    assert_eq!(recorded, reported);
    assert!(report.rows() > 0);
}

#[tokio::test]
async fn back_dated_returns_settle_at_their_final_amount_or_void() {
    let db = fresh_db_with_loans(2, 300).await;
    let loans = load_loans(&db.pool).await;
    let (first, second) = (
        days(ymd(2026, 2, 1), ymd(2026, 3, 15)),
        days(ymd(2026, 3, 16), ymd(2026, 4, 5)),
    );
    assert_all_succeeded(&walk(&db.pool, &first).await);
    let mut model = Model::after(start(), &loans, &first);

    // Open loans whose March fine is PENDING, accrued through March 15.
    let open_overdue: Vec<(i64, LoanTerms)> = loans
        .iter()
        .copied()
        .filter(|(id, l)| {
            l.returned_on.is_none()
                && model
                    .fines()
                    .iter()
                    .any(|f| f.loan_id == *id && f.settle_month == ymd(2026, 3, 1) && f.status == "PENDING")
        })
        .collect();
    assert!(
        open_overdue.len() >= 6,
        "only {} open overdue loans",
        open_overdue.len()
    );
    for (i, (id, loan)) in open_overdue.iter().take(6).enumerate() {
        let corrected = match i {
            // Returned on the due date after all: no overdue day at all, the March fine is void.
            0 | 1 => loan.due_on,
            // Returned earlier in March than accrued: settles at fewer days.
            2 | 3 => loan.due_on.max(ymd(2026, 3, 1)) + chrono::Days::new(1),
            // Returned in February (or the day it was borrowed): nothing overdue in March any more.
            _ => (loan.due_on + chrono::Days::new(1))
                .min(ymd(2026, 2, 28))
                .max(loan.borrowed_on),
        };
        set_return(&db.pool, *id, corrected).await;
    }
    let corrected = load_loans(&db.pool).await;
    assert_all_succeeded(&walk(&db.pool, &second).await);
    for &d in &second {
        model.run_date(&corrected, d);
    }

    assert_matches(&model, &fines(&db.pool).await, &ledger(&db.pool).await);
    let voided: Vec<_> = model.fines().into_iter().filter(|f| f.status == "VOID").collect();
    assert!(voided.len() >= 2, "the corrections void fines: {voided:?}");
    let reasons: Vec<String> = sqlx::query_scalar("select void_reason from fine_record where status = 'VOID'")
        .fetch_all(&db.pool)
        .await
        .unwrap();
    assert!(
        reasons.iter().all(|r| r == "no overdue days after return correction"),
        "{reasons:?}"
    );
}

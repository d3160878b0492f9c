//! `finesettle audit --month` from a terminal, after a backfill that made the month final (and
//! audited it by itself).

use std::time::Duration;

use crate::common::data::{random_loans, ymd};
use crate::common::process::{Finesettle, backfill};
use crate::common::seed::{migrated_db, seed};

const WITHIN: Duration = Duration::from_secs(120);

#[tokio::test]
async fn audit_prints_the_report_and_exits_non_zero_on_a_difference() {
    let (database, pool) = migrated_db().await;
    seed(&pool, &random_loans(74, 300)).await;
    let operator = || {
        Finesettle::new(database.url(), "operator-console")
            .env("FINESETTLE_SETTLE_START_DATE", "2026-03-01")
            .env("FINESETTLE_LOCK_AT_LEAST_FOR", "0s")
    };
    let settled = operator()
        .run(&backfill(ymd(2026, 3, 1), ymd(2026, 3, 31)), WITHIN)
        .await;
    settled.assert_success();
    // The backfill settled March 31, so it audited March when it was done.
    assert!(
        settled
            .stderr
            .lines()
            .any(|l| l.contains("\"month audited\"") && l.contains("\"audit.month\":\"2026-03\"")),
        "{}",
        settled.output()
    );

    let clean = operator().run(&["audit", "--month", "2026-03"], WITHIN).await;
    clean.assert_success();
    assert!(
        clean.stdout.starts_with("audit of 2026-03 (settle-fines;"),
        "{}",
        clean.output()
    );
    assert!(clean.stdout.contains("  differences: 0\n"), "{}", clean.output());
    assert!(clean.stdout.contains("  no alert\n"), "{}", clean.output());

    // A CHARGE lost: the report names the loan, the exit code says so.
    let (loan_id, fine_id): (i64, i64) = sqlx::query_as(
        "delete from ledger_entry e using fine_record f \
         where f.id = e.fine_id and e.id = (select min(id) from ledger_entry where kind = 'CHARGE') \
         returning f.loan_id, f.id",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    let broken = operator().run(&["audit", "--month", "2026-03"], WITHIN).await;
    broken.assert_failure();
    assert!(broken.stdout.contains("  differences: 1\n"), "{}", broken.output());
    assert!(
        broken
            .stdout
            .contains(&format!("loan {loan_id} fine {fine_id}: missing_charge")),
        "{}",
        broken.output()
    );
    assert!(broken.stdout.contains("(raised now)"), "{}", broken.output());
    assert!(
        broken.stderr.contains("the audit of 2026-03 found differences (1)"),
        "{}",
        broken.output()
    );

    // A month not final, and a month that is not one, are refused.
    let april = operator().run(&["audit", "--month", "2026-04"], WITHIN).await;
    april.assert_failure();
    assert!(april.stderr.contains("2026-04 is not final"), "{}", april.output());
    let typo = operator().run(&["audit", "--month", "2026-3"], WITHIN).await;
    typo.assert_failure();
    assert!(typo.stderr.contains("YYYY-MM"), "{}", typo.output());
}

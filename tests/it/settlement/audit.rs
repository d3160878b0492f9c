//! The audit of an ended month against what the walk wrote: a clean month, a tampered fine, a
//! lost CHARGE, a correction, a loan still queued, the refusals, and the audit a fire runs by
//! itself when it makes a month final.

use chrono::{Days, NaiveDate};
use finesettle::alerts::{AlertKind, AlertState, Publisher};
use finesettle::audit::{AuditConfig, AuditError, AuditFinding, AuditReport, audit_month};
use finesettle::domain::audit::{NotFinal, Reason};
use finesettle::jobs::Request;
use finesettle::settlement::Trigger;
use sqlx::PgPool;

use crate::common::data::{days, set_return, ymd};
use crate::common::fixtures::{insert_book, insert_fine, insert_loan};
use crate::common::settlement::{BATCH, Db, TASK, assert_all_succeeded, fresh_db, fresh_db_with_loans, start, walk};
use crate::common::spawn_app_with;

fn march() -> NaiveDate {
    ymd(2026, 3, 1)
}

/// The audit as the service runs it for `settle-fines` started on [`start`], with a webhook.
fn config() -> AuditConfig {
    AuditConfig {
        task_name: TASK.to_owned(),
        configured_start: Some(start()),
        webhook_enabled: true,
    }
}

async fn audit(pool: &PgPool, month: NaiveDate) -> AuditReport {
    audit_month(pool, &config(), month)
        .await
        .expect("the month can be audited")
}

/// 300 random loans, every date from March 1 to April 2 settled: March is final.
async fn march_settled(seed: u64) -> Db {
    let db = fresh_db_with_loans(seed, 300).await;
    assert_all_succeeded(&walk(&db.pool, &days(march(), ymd(2026, 4, 2))).await);
    db
}

/// A SETTLED March fine with an amount: (loan, fine, amount).
async fn a_settled_march_fine(pool: &PgPool) -> (i64, i64, i64) {
    sqlx::query_as(
        "select loan_id, id, amount_cents from fine_record \
         where settle_month = $1 and status = 'SETTLED' and amount_cents > 0 order by loan_id limit 1",
    )
    .bind(march())
    .fetch_one(pool)
    .await
    .unwrap()
}

fn reasons_of(findings: &[AuditFinding], loan_id: i64) -> Vec<Reason> {
    findings
        .iter()
        .filter(|f| f.loan_id.0 == loan_id)
        .map(|f| f.reason)
        .collect()
}

/// (event, alert id) of every queued webhook notification.
async fn deliveries(pool: &PgPool) -> Vec<(String, i64)> {
    sqlx::query_as("select event, alert_id from alert_delivery order by created_at, event")
        .fetch_all(pool)
        .await
        .unwrap()
}

async fn alert_count(pool: &PgPool) -> i64 {
    sqlx::query_scalar("select count(*) from alert")
        .fetch_one(pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_clean_month_reports_no_difference_and_raises_no_alert() {
    let db = march_settled(11).await;
    let report = audit(&db.pool, ymd(2026, 3, 17)).await;
    assert_eq!(report.month, "2026-03");
    assert_eq!(report.settled_through, ymd(2026, 4, 2));
    assert_eq!(report.start_date, start());
    assert_eq!(
        (
            report.differences_total,
            report.corrections_total,
            report.pending_accrual_total
        ),
        (0, 0, 0),
        "{report}"
    );
    // The data has work in it: many fines, and the recomputation adds up to what was settled.
    assert!(report.fines_checked > 3 * BATCH, "{report}");
    assert!(report.loans_checked >= report.fines_checked);
    assert!(report.expected_cents > 0);
    assert_eq!(report.expected_cents, report.settled_cents);
    assert!(report.alert.is_none() && !report.alert_raised && !report.alert_resolved);
    assert_eq!(alert_count(&db.pool).await, 0);

    // A month before the start month owes nothing, and nothing was accrued for it.
    let december = audit(&db.pool, ymd(2025, 12, 1)).await;
    assert_eq!((december.fines_checked, december.differences_total), (0, 0));
    assert!(december.loans_checked > 0, "December had overdue loans");
}

#[tokio::test]
async fn a_month_not_final_is_refused() {
    let db = march_settled(12).await;
    // April has not ended by the latest settled date.
    match audit_month(&db.pool, &config(), ymd(2026, 4, 1)).await {
        Err(AuditError::NotFinal(NotFinal::NotEnded { settled_through, .. })) => {
            assert_eq!(settled_through, ymd(2026, 4, 2));
        }
        other => panic!("{other:?}"),
    }
    // February ended long ago, but none of its dates was settled (from the start date on).
    match audit_month(&db.pool, &config(), ymd(2026, 2, 1)).await {
        Err(AuditError::NotFinal(NotFinal::Unsettled { unsettled, .. })) => assert_eq!(unsettled, ymd(2026, 2, 1)),
        other => panic!("{other:?}"),
    }
    // Nothing ever settled.
    let empty = fresh_db().await;
    assert!(matches!(
        audit_month(&empty.pool, &config(), march()).await,
        Err(AuditError::NotFinal(NotFinal::NothingSettled { .. }))
    ));
    assert_eq!(alert_count(&db.pool).await, 0);
}

#[tokio::test]
async fn a_tampered_fine_raises_one_audit_alert_naming_the_loan_until_a_clean_re_audit() {
    let db = march_settled(13).await;
    let (loan_id, fine_id, amount) = a_settled_march_fine(&db.pool).await;
    // A settled amount cannot change (the trigger refuses it): only someone who switches the
    // trigger off can. The CHARGE stays as it was.
    let set_amount = |cents: i64| {
        let pool = db.pool.clone();
        async move {
            let mut tx = pool.begin().await.unwrap();
            sqlx::raw_sql("alter table fine_record disable trigger fine_record_transition")
                .execute(&mut *tx)
                .await
                .unwrap();
            sqlx::query("update fine_record set amount_cents = $2 where id = $1")
                .bind(fine_id)
                .bind(cents)
                .execute(&mut *tx)
                .await
                .unwrap();
            sqlx::raw_sql("alter table fine_record enable trigger fine_record_transition")
                .execute(&mut *tx)
                .await
                .unwrap();
            tx.commit().await.unwrap();
        }
    };
    set_amount(amount + 50).await;

    let report = audit(&db.pool, march()).await;
    assert_eq!(report.differences_total, 2, "{report}");
    assert_eq!(
        reasons_of(&report.differences, loan_id),
        [Reason::AmountDiffers, Reason::ChargeDiffers]
    );
    let finding = &report.differences[0];
    assert_eq!(
        (
            finding.fine_id,
            finding.expected_cents,
            finding.stored_cents,
            finding.charged_cents
        ),
        (Some(fine_id), amount, Some(amount + 50), Some(amount))
    );
    assert_eq!(report.corrections_total, 0);
    let alert = report.alert.clone().expect("an AUDIT alert");
    assert!(report.alert_raised);
    assert_eq!(
        (alert.kind, alert.business_date, alert.state),
        (AlertKind::Audit, march(), AlertState::Active)
    );
    assert!(
        alert.detail.contains(&format!("2 differences in loan {loan_id};")),
        "{}",
        alert.detail
    );
    assert_eq!(deliveries(&db.pool).await, [("raised".to_owned(), alert.id)]);

    // The minute-by-minute resolution leaves it alone, although its date has a SUCCESS.
    let publisher = Publisher {
        pool: &db.pool,
        task_name: &TASK,
        webhook_enabled: true,
    };
    assert!(publisher.resolve_gone().await.unwrap().is_empty());
    // Audited again: the same alert, not a second one.
    let again = audit(&db.pool, march()).await;
    assert!(!again.alert_raised);
    assert_eq!(
        again.alert.as_ref().map(|a| (a.id, a.state)),
        Some((alert.id, AlertState::Active))
    );
    assert_eq!(alert_count(&db.pool).await, 1);

    // Put right: a clean re-audit resolves it, with its notification.
    set_amount(amount).await;
    let clean = audit(&db.pool, march()).await;
    assert_eq!(clean.differences_total, 0, "{clean}");
    assert!(clean.alert_resolved);
    assert_eq!(
        clean.alert.as_ref().map(|a| (a.id, a.state)),
        Some((alert.id, AlertState::Resolved))
    );
    assert_eq!(
        deliveries(&db.pool).await,
        [("raised".to_owned(), alert.id), ("resolved".to_owned(), alert.id)]
    );

    // Tampered again: reported every time, but one alert per kind and date, and this one is
    // resolved for good (the audit logs an error instead).
    set_amount(amount + 1).await;
    let later = audit(&db.pool, march()).await;
    assert_eq!(later.differences_total, 2, "{later}");
    assert!(!later.alert_raised);
    assert_eq!(
        later.alert.as_ref().map(|a| (a.id, a.state)),
        Some((alert.id, AlertState::Resolved))
    );
}

#[tokio::test]
async fn a_missing_charge_is_reported() {
    let db = march_settled(14).await;
    let (loan_id, fine_id, amount) = a_settled_march_fine(&db.pool).await;
    sqlx::query("delete from ledger_entry where fine_id = $1 and kind = 'CHARGE'")
        .bind(fine_id)
        .execute(&db.pool)
        .await
        .unwrap();

    let report = audit(&db.pool, march()).await;
    assert_eq!(report.differences_total, 1, "{report}");
    assert_eq!(reasons_of(&report.differences, loan_id), [Reason::MissingCharge]);
    assert_eq!(
        (report.differences[0].stored_cents, report.differences[0].charged_cents),
        (Some(amount), None)
    );
    let alert = report.alert.as_ref().expect("an AUDIT alert");
    assert!(
        alert.detail.contains(&format!("in loan {loan_id};")),
        "{}",
        alert.detail
    );
    assert!(
        report
            .to_string()
            .contains(&format!("loan {loan_id} fine {fine_id}: missing_charge"))
    );
}

#[tokio::test]
async fn a_return_back_dated_after_its_month_was_settled_is_a_correction_not_an_error() {
    let db = march_settled(15).await;
    // An open loan fined for March from its due date on: the book came back two days after it
    // was due, says the librarian in April.
    let (loan_id, due_on): (i64, NaiveDate) = sqlx::query_as(
        "select l.id, l.due_on from loan l join fine_record f on f.loan_id = l.id \
         where f.settle_month = $1 and f.status = 'SETTLED' and l.returned_on is null \
           and l.due_on between $1 and $1 + 20 and l.daily_fine_cents > 0 \
         order by l.id limit 1",
    )
    .bind(march())
    .fetch_one(&db.pool)
    .await
    .unwrap();
    set_return(&db.pool, loan_id, due_on + Days::new(2)).await;

    for next_date in [ymd(2026, 4, 3), ymd(2026, 4, 4)] {
        let report = audit(&db.pool, march()).await;
        assert_eq!(report.differences_total, 0, "{report}");
        assert_eq!(
            reasons_of(&report.corrections, loan_id),
            [Reason::AmountDiffers],
            "{report}"
        );
        let correction = &report.corrections[0];
        assert_eq!(correction.expected_days, 2);
        assert!(correction.stored_days.unwrap() > 2);
        assert!(correction.loan_updated_at > correction.settled_at.unwrap());
        assert!(report.alert.is_none());
        // The next date takes the loan off the queue; the settled March fine stays as it was.
        assert_all_succeeded(&walk(&db.pool, &[next_date]).await);
    }
    assert_eq!(alert_count(&db.pool).await, 0);
}

#[tokio::test]
async fn a_loan_recorded_after_its_month_was_settled_is_pending_accrual_until_the_next_run() {
    let db = march_settled(16).await;
    // An import: borrowed in February, due on March 5, still out, at 50 cents a day.
    let member: i64 = sqlx::query_scalar("select min(id) from member")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    let book = insert_book(&db.pool, "Imported").await;
    let loan_id = insert_loan(&db.pool, member, book, ymd(2026, 2, 20), ymd(2026, 3, 5)).await;

    let report = audit(&db.pool, march()).await;
    assert_eq!(report.differences_total, 0, "{report}");
    assert_eq!(reasons_of(&report.pending_accrual, loan_id), [Reason::MissingFine]);
    assert_eq!(report.pending_accrual[0].expected_cents, 26 * 50);
    assert!(report.alert.is_none());

    // The next run accrues and settles it: nothing pending, nothing wrong.
    assert_all_succeeded(&walk(&db.pool, &[ymd(2026, 4, 3)]).await);
    let after = audit(&db.pool, march()).await;
    assert_eq!(
        (
            after.differences_total,
            after.corrections_total,
            after.pending_accrual_total
        ),
        (0, 0, 0),
        "{after}"
    );
    assert_eq!(after.fines_checked, report.fines_checked + 1);
    assert_eq!(alert_count(&db.pool).await, 0);
}

#[tokio::test]
async fn a_fire_that_makes_a_month_final_audits_it() {
    let app = spawn_app_with(|settings| {
        settings.job.settle_start_date = Some(march());
        settings.job.lock_at_least_for = std::time::Duration::ZERO;
    })
    .await;
    // A SETTLED March fine of a loan that owes nothing in March: no run writes or fixes it.
    let member: i64 =
        sqlx::query_scalar("insert into member (name, email) values ('Ada', 'ada@example.org') returning id")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    let book = insert_book(&app.pool, "Notes").await;
    let loan_id = insert_loan(&app.pool, member, book, ymd(2026, 2, 1), ymd(2026, 4, 30)).await;
    insert_fine(&app.pool, loan_id, march(), 3, 150, "SETTLED").await;

    let fire = |from: NaiveDate, to: NaiveDate| {
        let job = app.job.clone();
        let pool = app.pool.clone();
        async move {
            let now = finesettle::store::clock::now(&pool).await.unwrap();
            let started = job
                .start(Trigger::Manual, now, Request::Range { from, to })
                .await
                .expect("the fire starts");
            let report = started.wait().await;
            assert_all_succeeded(&report.walk);
        }
    };
    // Up to March 30 the month is not final: no audit, no alert.
    fire(march(), ymd(2026, 3, 30)).await;
    assert_eq!(alert_count(&app.pool).await, 0);
    // The fire that settles March 31 audits March.
    fire(ymd(2026, 3, 31), ymd(2026, 3, 31)).await;
    let alerts = app.get("/api/v1/alerts").await;
    let items = alerts.ok(200)["items"].as_array().unwrap().clone();
    assert_eq!(items.len(), 1, "{items:?}");
    assert_eq!(items[0]["kind"], "AUDIT");
    assert_eq!(items[0]["business_date"], "2026-03-01");
    assert!(
        items[0]["detail"]
            .as_str()
            .unwrap()
            .contains(&format!("1 difference in loan {loan_id};")),
        "{}",
        items[0]
    );
}

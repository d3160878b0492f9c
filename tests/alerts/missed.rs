//! MISSED: dates the schedule expected that have no SUCCESS, including dates nothing ran for.
//!
//! Evaluation instants are passed in (`evaluate_at`) and the deployment instant is set with SQL,
//! so these tests mean the same whatever the wall clock says.

use finesettle::alerts::{AlertKind, evaluate_at};

use crate::common::spawn_app;
use crate::support::{alerts, date, execution, instant, registered_at, rules};

#[tokio::test]
async fn a_slot_nothing_ran_for_raises_one_alert_once_its_grace_has_passed() {
    let app = spawn_app().await;
    let rules = rules(false);
    // Deployed after the 2026-06-09 02:00Z fire; the 2026-06-10 02:00Z fire settles 2026-06-09.
    registered_at(&app.pool, "2026-06-09T12:00:00Z").await;

    let within_grace = evaluate_at(&app.pool, &rules, instant("2026-06-10T02:59:59Z"))
        .await
        .unwrap();
    assert!(within_grace.raised.is_empty(), "{within_grace:?}");
    assert!(alerts(&app.pool).await.is_empty());

    let report = evaluate_at(&app.pool, &rules, instant("2026-06-10T03:00:01Z"))
        .await
        .unwrap();
    assert_eq!(report.raised.len(), 1, "{report:?}");
    let alert = &report.raised[0];
    assert_eq!(
        (alert.kind, alert.business_date),
        (AlertKind::Missed, date("2026-06-09"))
    );
    assert_eq!(alert.execution_id, None);
    assert!(
        alert.detail.contains("no SUCCESS by 2026-06-10T03:00:00Z"),
        "{}",
        alert.detail
    );
    assert!(alert.detail.contains("no execution was recorded"), "{}", alert.detail);

    let later = evaluate_at(&app.pool, &rules, instant("2026-06-10T09:00:00Z"))
        .await
        .unwrap();
    assert!(later.raised.is_empty(), "{later:?}");

    // The fix: a (late) SUCCESS for the date.
    execution(&app.pool, "2026-06-09", "SUCCESS", "1 minute").await;
    let report = evaluate_at(&app.pool, &rules, instant("2026-06-10T09:01:00Z"))
        .await
        .unwrap();
    assert_eq!(report.resolved.len(), 1, "{report:?}");
    assert_eq!(report.resolved[0].id, alert.id);
    assert!(report.raised.is_empty(), "{report:?}");
}

#[tokio::test]
async fn expected_dates_start_at_the_start_date_and_skip_settled_ones() {
    let app = spawn_app().await;
    let mut rules = rules(false);
    rules.settle_start_date = Some(date("2026-06-07"));
    registered_at(&app.pool, "2026-01-01T00:00:00Z").await;
    execution(&app.pool, "2026-06-08", "SUCCESS", "1 day").await;

    let report = evaluate_at(&app.pool, &rules, instant("2026-06-10T04:00:00Z"))
        .await
        .unwrap();
    let mut missed: Vec<_> = report.raised.iter().map(|a| (a.kind, a.business_date)).collect();
    missed.sort();
    assert_eq!(
        missed,
        [
            (AlertKind::Missed, date("2026-06-07")),
            (AlertKind::Missed, date("2026-06-09"))
        ]
    );
}

#[tokio::test]
async fn a_date_that_ran_and_failed_is_missed_as_well_as_failed() {
    let app = spawn_app().await;
    let rules = rules(false);
    registered_at(&app.pool, "2026-06-09T12:00:00Z").await;
    execution(&app.pool, "2026-06-09", "FAILED", "10 minutes").await;

    let report = evaluate_at(&app.pool, &rules, instant("2026-06-10T04:00:00Z"))
        .await
        .unwrap();
    let mut kinds: Vec<_> = report.raised.iter().map(|a| a.kind).collect();
    kinds.sort();
    assert_eq!(kinds, [AlertKind::Failed, AlertKind::Missed]);
    let missed = report.raised.iter().find(|a| a.kind == AlertKind::Missed).unwrap();
    assert!(
        missed.detail.contains("1 execution, none succeeded"),
        "{}",
        missed.detail
    );

    execution(&app.pool, "2026-06-09", "SUCCESS", "1 minute").await;
    let report = evaluate_at(&app.pool, &rules, instant("2026-06-10T05:00:00Z"))
        .await
        .unwrap();
    assert_eq!(report.resolved.len(), 2, "{report:?}");
}

#[tokio::test]
async fn nothing_is_missed_before_the_job_is_registered() {
    let app = spawn_app().await;
    let report = evaluate_at(&app.pool, &rules(false), instant("2026-06-10T04:00:00Z"))
        .await
        .unwrap();
    assert!(report.raised.is_empty(), "{report:?}");
    // Slots before the registration expect nothing either.
    registered_at(&app.pool, "2026-06-10T02:00:00Z").await;
    let report = evaluate_at(&app.pool, &rules(false), instant("2026-06-10T04:00:00Z"))
        .await
        .unwrap();
    assert!(report.raised.is_empty(), "{report:?}");
}

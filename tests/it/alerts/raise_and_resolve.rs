//! FAILED and TIMEOUT, raised from arranged records and resolved by the fix.

use finesettle::alerts::{AlertKind, AlertState, evaluate_once};

use crate::alerts::support::{alerts, assert_resolved_only, count, date, execution, finish, rules};
use crate::common::spawn_app;

#[tokio::test]
async fn failed_is_raised_once_and_resolved_by_a_success() {
    let app = spawn_app().await;
    let rules = rules(false);
    let failed = execution(&app.pool, "2026-06-01", "FAILED", "20 minutes").await;
    // A date that failed and was then settled needs nobody.
    execution(&app.pool, "2026-06-02", "FAILED", "20 minutes").await;
    execution(&app.pool, "2026-06-02", "SUCCESS", "10 minutes").await;

    let report = evaluate_once(&app.pool, &rules).await.unwrap();
    assert_eq!(report.raised.len(), 1, "{report:?}");
    let alert = &report.raised[0];
    assert_eq!(alert.kind, AlertKind::Failed);
    assert_eq!(alert.task_name, "settle-fines".into());
    assert_eq!(alert.business_date, date("2026-06-01"));
    assert_eq!(alert.state, AlertState::Active);
    assert_eq!(alert.execution_id, Some(failed));
    assert!(alert.detail.contains("fencing token 1 is stale"), "{}", alert.detail);
    assert!(alert.resolved_at.is_none());

    // Raised once: evaluating again, or failing again on the same date, adds nothing.
    assert!(evaluate_once(&app.pool, &rules).await.unwrap().raised.is_empty());
    execution(&app.pool, "2026-06-01", "FAILED", "5 minutes").await;
    let report = evaluate_once(&app.pool, &rules).await.unwrap();
    assert!(report.raised.is_empty() && report.resolved.is_empty(), "{report:?}");

    // The fix: the date is settled.
    execution(&app.pool, "2026-06-01", "SUCCESS", "1 minute").await;
    let report = evaluate_once(&app.pool, &rules).await.unwrap();
    assert!(report.raised.is_empty(), "{report:?}");
    assert_eq!(report.resolved.len(), 1, "{report:?}");
    let resolved = &report.resolved[0];
    assert_eq!((resolved.id, resolved.state), (alert.id, AlertState::Resolved));
    assert!(resolved.resolved_at.is_some_and(|t| t >= alert.raised_at));

    let report = evaluate_once(&app.pool, &rules).await.unwrap();
    assert!(report.raised.is_empty() && report.resolved.is_empty(), "{report:?}");
    assert_eq!(
        alerts(&app.pool).await,
        [("FAILED".to_owned(), date("2026-06-01"), "RESOLVED".to_owned())]
    );
    // No webhook configured: nothing queued.
    assert_eq!(count(&app.pool, "select count(*) from alert_delivery").await, 0);
}

#[tokio::test]
async fn timeout_is_raised_past_the_job_timeout_and_resolved_when_the_run_ends() {
    let app = spawn_app().await;
    let rules = rules(false);
    let stuck = execution(&app.pool, "2026-06-01", "RUNNING", "31 minutes").await;
    let young = execution(&app.pool, "2026-06-02", "RUNNING", "29 minutes").await;

    let report = evaluate_once(&app.pool, &rules).await.unwrap();
    assert_eq!(report.raised.len(), 1, "{report:?}");
    let alert = &report.raised[0];
    assert_eq!(
        (alert.kind, alert.business_date),
        (AlertKind::Timeout, date("2026-06-01"))
    );
    assert_eq!(alert.execution_id, Some(stuck));
    assert!(alert.detail.contains("30m"), "{}", alert.detail);
    assert!(evaluate_once(&app.pool, &rules).await.unwrap().raised.is_empty());

    // The other run finishing resolves nothing; this one finishing does.
    finish(&app.pool, young, "SUCCESS").await;
    assert!(evaluate_once(&app.pool, &rules).await.unwrap().resolved.is_empty());
    finish(&app.pool, stuck, "SUCCESS").await;
    let report = evaluate_once(&app.pool, &rules).await.unwrap();
    assert_resolved_only(&report, alert.id);
}

#[tokio::test]
async fn a_stuck_run_that_then_fails_trades_its_timeout_for_a_failed_alert() {
    let app = spawn_app().await;
    let rules = rules(false);
    let stuck = execution(&app.pool, "2026-06-01", "RUNNING", "2 hours").await;
    let report = evaluate_once(&app.pool, &rules).await.unwrap();
    assert_eq!(report.raised[0].kind, AlertKind::Timeout);

    finish(&app.pool, stuck, "FAILED").await;
    let report = evaluate_once(&app.pool, &rules).await.unwrap();
    assert_eq!(report.raised.len(), 1, "{report:?}");
    assert_eq!(report.raised[0].kind, AlertKind::Failed);
    assert_eq!(report.resolved.len(), 1, "{report:?}");
    assert_eq!(report.resolved[0].kind, AlertKind::Timeout);
    assert_eq!(
        alerts(&app.pool).await,
        [
            ("TIMEOUT".to_owned(), date("2026-06-01"), "RESOLVED".to_owned()),
            ("FAILED".to_owned(), date("2026-06-01"), "ACTIVE".to_owned()),
        ]
    );
}

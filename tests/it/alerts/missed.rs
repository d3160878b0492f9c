//! MISSED: dates the schedule expected that have no SUCCESS, including dates nothing ran for,
//! gaps behind later SUCCESSes, and dates from the start date on that came before the deployment.
//!
//! Evaluation instants are passed in (`evaluate_at`) and the deployment instant is set with SQL,
//! so these tests mean the same whatever the wall clock says.

use chrono::{DateTime, Utc};
use finesettle::alerts::{AlertKind, SETTLE_FINES, evaluate_at, register};

use crate::alerts::support::{
    alerts, assert_resolved_only, date, days, evaluate, execution, instant, missed_dates, recorded_start,
    registered_at, rules, rules_from, successes,
};
use crate::common::spawn_app;

#[tokio::test]
async fn a_slot_nothing_ran_for_raises_one_alert_once_its_grace_has_passed() {
    let app = spawn_app().await;
    let rules = rules(false);
    // Deployed after the 2026-06-09 02:00Z fire; the 2026-06-10 02:00Z fire settles 2026-06-09.
    registered_at(&app.pool, "2026-06-09T12:00:00Z").await;

    let within_grace = evaluate(&app.pool, &rules, "2026-06-10T02:59:59Z").await;
    assert!(within_grace.raised.is_empty(), "{within_grace:?}");
    assert!(alerts(&app.pool).await.is_empty());

    let report = evaluate(&app.pool, &rules, "2026-06-10T03:00:01Z").await;
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

    let later = evaluate(&app.pool, &rules, "2026-06-10T09:00:00Z").await;
    assert!(later.raised.is_empty(), "{later:?}");

    // The fix: a (late) SUCCESS for the date.
    execution(&app.pool, "2026-06-09", "SUCCESS", "1 minute").await;
    let report = evaluate(&app.pool, &rules, "2026-06-10T09:01:00Z").await;
    assert_resolved_only(&report, alert.id);
}

#[tokio::test]
async fn expected_dates_start_at_the_start_date_and_skip_settled_ones() {
    let app = spawn_app().await;
    let rules = rules_from("2026-06-07");
    registered_at(&app.pool, "2026-01-01T00:00:00Z").await;
    execution(&app.pool, "2026-06-08", "SUCCESS", "1 day").await;

    let report = evaluate(&app.pool, &rules, "2026-06-10T04:00:00Z").await;
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

    let report = evaluate(&app.pool, &rules, "2026-06-10T04:00:00Z").await;
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
    let report = evaluate(&app.pool, &rules, "2026-06-10T05:00:00Z").await;
    assert_eq!(report.resolved.len(), 2, "{report:?}");
}

#[tokio::test]
async fn nothing_is_missed_before_the_job_is_registered() {
    let app = spawn_app().await;
    let report = evaluate(&app.pool, &rules(false), "2026-06-10T04:00:00Z").await;
    assert!(report.raised.is_empty(), "{report:?}");
    // Slots before the registration expect nothing either.
    registered_at(&app.pool, "2026-06-10T02:00:00Z").await;
    let report = evaluate(&app.pool, &rules(false), "2026-06-10T04:00:00Z").await;
    assert!(report.raised.is_empty(), "{report:?}");
}

#[tokio::test]
async fn a_gap_behind_later_successes_raises_however_old_it_is() {
    let app = spawn_app().await;
    let rules = rules_from("2025-01-01");
    registered_at(&app.pool, "2025-01-01T00:00:00Z").await;
    // Settled every night for a year and a half, except three dates in March 2025 (a failure
    // nobody retried), some 450 slots ago.
    successes(&app.pool, "2025-01-01", "2025-03-09").await;
    successes(&app.pool, "2025-03-13", "2026-06-09").await;

    let report = evaluate(&app.pool, &rules, "2026-06-10T03:00:01Z").await;
    let raised: Vec<_> = report.raised.iter().map(|a| (a.kind, a.business_date)).collect();
    assert_eq!(
        raised,
        days("2025-03-10", "2025-03-12")
            .into_iter()
            .map(|d| (AlertKind::Missed, d))
            .collect::<Vec<_>>()
    );
    assert!(
        report.raised[0]
            .detail
            .starts_with("no SUCCESS by 2025-03-11T03:00:00Z (fire at 2025-03-11T02:00:00Z + 1h grace)"),
        "{}",
        report.raised[0].detail
    );

    // The next run fills one of them: that alert resolves, the others stay.
    execution(&app.pool, "2025-03-11", "SUCCESS", "1 minute").await;
    let report = evaluate(&app.pool, &rules, "2026-06-10T04:00:00Z").await;
    let resolved: Vec<_> = report.resolved.iter().map(|a| a.business_date).collect();
    assert_eq!(resolved, [date("2025-03-11")]);
    assert!(report.raised.is_empty(), "{report:?}");
    assert_eq!(
        missed_dates(&app.pool, "ACTIVE").await,
        [date("2025-03-10"), date("2025-03-12")]
    );
}

/// Issue 10, case 2. "Today" is 2026-06-30. Dates were settled through today-20 with
/// `finesettle settle` before the service was deployed (which recorded the start date), then an
/// operator settled today-5 alone; the service first started at today-3.
#[tokio::test]
async fn dates_skipped_by_an_operators_later_run_raise_until_they_are_settled() {
    let app = spawn_app().await;
    let rules = rules(false);
    recorded_start(&app.pool, "2026-05-21").await;
    successes(&app.pool, "2026-05-21", "2026-06-10").await;
    execution(&app.pool, "2026-06-25", "SUCCESS", "1 minute").await;
    registered_at(&app.pool, "2026-06-27T12:00:00Z").await;

    let report = evaluate(&app.pool, &rules, "2026-06-30T03:00:01Z").await;
    assert!(report.raised.iter().all(|a| a.kind == AlertKind::Missed), "{report:?}");
    let mut expected = days("2026-06-11", "2026-06-24");
    expected.extend(days("2026-06-26", "2026-06-29"));
    assert_eq!(missed_dates(&app.pool, "ACTIVE").await, expected);
    // The gap's fires came before the service did: their grace counts from its first start.
    let first = &report.raised[0];
    assert_eq!(first.business_date, date("2026-06-11"));
    assert!(
        first.detail.starts_with(
            "no SUCCESS by 2026-06-27T13:00:00Z (its fire at 2026-06-12T02:00:00Z came before the \
             job's first start at 2026-06-27T12:00:00Z; 1h grace from then)"
        ),
        "{}",
        first.detail
    );

    // The next run fills the gap (oldest first): those alerts resolve; the later dates stay.
    successes(&app.pool, "2026-06-11", "2026-06-24").await;
    let report = evaluate(&app.pool, &rules, "2026-06-30T04:00:00Z").await;
    let resolved: Vec<_> = report.resolved.iter().map(|a| a.business_date).collect();
    assert_eq!(resolved, days("2026-06-11", "2026-06-24"));
    assert!(report.raised.is_empty(), "{report:?}");
    assert_eq!(
        missed_dates(&app.pool, "ACTIVE").await,
        days("2026-06-26", "2026-06-29")
    );
}

#[tokio::test]
async fn the_recorded_start_date_is_expected_from_when_none_is_configured() {
    let app = spawn_app().await;
    let mut rules = rules(false);
    recorded_start(&app.pool, "2026-05-20").await;
    registered_at(&app.pool, "2026-06-05T12:00:00Z").await;
    execution(&app.pool, "2026-05-25", "SUCCESS", "1 minute").await;
    let at = instant("2026-06-08T03:00:01Z");

    // A configured start date wins over the recorded one.
    rules.settle_start_date = Some(date("2026-06-01"));
    evaluate_at(&app.pool, &rules, at).await.unwrap();
    assert_eq!(
        missed_dates(&app.pool, "ACTIVE").await,
        days("2026-06-01", "2026-06-07")
    );

    // Unset: every date from the recorded one on, before the deployment too.
    rules.settle_start_date = None;
    let report = evaluate_at(&app.pool, &rules, at).await.unwrap();
    let mut raised: Vec<_> = report.raised.iter().map(|a| a.business_date).collect();
    raised.sort();
    let mut expected = days("2026-05-20", "2026-05-24");
    expected.extend(days("2026-05-26", "2026-05-31"));
    assert_eq!(raised, expected);
}

#[tokio::test]
async fn an_old_start_date_at_the_first_deployment_raises_only_after_the_grace_and_in_batches() {
    let app = spawn_app().await;
    let rules = rules_from("2026-01-01");
    registered_at(&app.pool, "2026-06-10T10:00:00Z").await;

    // The first start's catch-up has the grace to settle five months: no alert meanwhile.
    for at in ["2026-06-10T10:00:00Z", "2026-06-10T10:59:59Z"] {
        let report = evaluate(&app.pool, &rules, at).await;
        assert!(report.raised.is_empty(), "{at}: {report:?}");
    }

    // Then every date still without SUCCESS, 100 per evaluation, oldest first.
    let at = instant("2026-06-10T11:00:00Z");
    let first = evaluate_at(&app.pool, &rules, at).await.unwrap();
    assert_eq!(dates_of(&first.raised), days("2026-01-01", "2026-04-10"));
    assert!(
        first.raised[0].detail.starts_with("no SUCCESS by 2026-06-10T11:00:00Z"),
        "{}",
        first.raised[0].detail
    );
    let second = evaluate_at(&app.pool, &rules, at + chrono::TimeDelta::minutes(1))
        .await
        .unwrap();
    assert_eq!(dates_of(&second.raised), days("2026-04-11", "2026-06-09"));
    let third = evaluate_at(&app.pool, &rules, at + chrono::TimeDelta::minutes(2))
        .await
        .unwrap();
    assert!(third.raised.is_empty(), "{third:?}");
}

/// `finesettle settle` before any `serve` writes the job's row with its start date; that is not
/// a deployment. The first service to register the job sets the instant, and it never moves.
#[tokio::test]
async fn a_command_that_records_the_start_date_does_not_deploy_the_job() {
    let app = spawn_app().await;
    recorded_start(&app.pool, "2026-01-01").await;
    assert_eq!(first_seen_at(&app).await, None);
    let report = evaluate(&app.pool, &rules(false), "2026-06-10T04:00:00Z").await;
    assert!(report.raised.is_empty(), "{report:?}");

    register(&app.pool, &SETTLE_FINES).await.unwrap();
    assert!(first_seen_at(&app).await.is_some());
    registered_at(&app.pool, "2026-06-09T12:00:00Z").await;
    register(&app.pool, &SETTLE_FINES).await.unwrap();
    assert_eq!(first_seen_at(&app).await, Some(instant("2026-06-09T12:00:00Z")));
}

async fn first_seen_at(app: &crate::common::TestApp) -> Option<DateTime<Utc>> {
    sqlx::query_scalar("select first_seen_at from job_registration where task_name = 'settle-fines'")
        .fetch_one(&app.pool)
        .await
        .expect("the job's row")
}

fn dates_of(alerts: &[finesettle::alerts::Alert]) -> Vec<chrono::NaiveDate> {
    alerts.iter().map(|a| a.business_date).collect()
}

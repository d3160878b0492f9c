//! CLOCK_SKEW, raised from the replicas' recorded clock measurements (what each replica's
//! clock-skew probe writes) and resolved when the clocks are back or the skewed replica stops
//! measuring; once across replicas.

use chrono::{DateTime, NaiveDate, TimeDelta, Utc};
use finesettle::alerts::{AlertKind, AlertState, EvaluationReport, deliver_due, evaluate_at, evaluate_once};
use finesettle::clock::{Clock, DatabaseTime};
use finesettle::store::{clock, replica_clocks};
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;

use crate::alerts::support::{Receiver, alerts, execution, replica_pool, rules, slow_retry_policy};
use crate::common::{TestApp, spawn_app};

/// Records a measurement of `instance_id`'s clock, taken now by the database's clock, as its
/// probe does.
async fn measured(pool: &PgPool, instance_id: &str, skew_seconds: f64) {
    replica_clocks::record(pool, instance_id, skew_seconds)
        .await
        .expect("record a clock measurement");
}

/// The database's now, and its date (the rules' business zone is UTC).
async fn database_now(pool: &PgPool) -> (DateTime<Utc>, NaiveDate) {
    let now = clock::now(pool).await.expect("read the database clock");
    (now, now.date_naive())
}

/// Three replicas (three pools) evaluate at once.
async fn three_evaluate(app: &TestApp, webhook_enabled: bool) -> [EvaluationReport; 3] {
    let rules = rules(webhook_enabled);
    let (two, three) = (
        replica_pool(app.database.url()).await,
        replica_pool(app.database.url()).await,
    );
    let (a, b, c) = tokio::join!(
        evaluate_once(&app.pool, &rules),
        evaluate_once(&two, &rules),
        evaluate_once(&three, &rules)
    );
    [a.unwrap(), b.unwrap(), c.unwrap()]
}

fn raised(reports: &[EvaluationReport]) -> Vec<(AlertKind, String)> {
    reports
        .iter()
        .flat_map(|r| r.raised.iter().map(|a| (a.kind, a.detail.clone())))
        .collect()
}

fn resolved(reports: &[EvaluationReport]) -> Vec<(AlertKind, AlertState)> {
    reports
        .iter()
        .flat_map(|r| r.resolved.iter().map(|a| (a.kind, a.state)))
        .collect()
}

/// Three replicas evaluate and neither raise nor resolve anything: the only alert stays the
/// CLOCK_SKEW of `business_date`, in `state`.
async fn three_evaluate_and_leave(app: &TestApp, business_date: NaiveDate, state: &str) {
    let reports = three_evaluate(app, false).await;
    assert!(
        raised(&reports).is_empty() && resolved(&reports).is_empty(),
        "{reports:?}"
    );
    assert_eq!(
        alerts(&app.pool).await,
        [("CLOCK_SKEW".to_owned(), business_date, state.to_owned())]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 3)]
async fn a_skewed_replica_raises_one_clock_skew_alert_however_many_replicas_evaluate() {
    let app = spawn_app().await;
    measured(&app.pool, "r1", 0.2).await;
    measured(&app.pool, "r2", 10_800.25).await;
    measured(&app.pool, "r3", -0.4).await;
    let (_, today) = database_now(&app.pool).await;

    let reports = three_evaluate(&app, false).await;
    let detail = "replica r2's clock is 10800.3 s ahead of the database's (limit 5 s)";
    assert_eq!(raised(&reports), [(AlertKind::ClockSkew, detail.to_owned())]);
    let alert = reports.iter().find_map(|r| r.raised.first()).unwrap();
    assert_eq!(
        (
            alert.task_name.as_str(),
            alert.business_date,
            alert.state,
            alert.execution_id
        ),
        ("settle-fines", today, AlertState::Active, None)
    );

    // Still skewed, and the alert is active: nothing new, whoever evaluates.
    measured(&app.pool, "r2", 10_800.5).await;
    three_evaluate_and_leave(&app, today, "ACTIVE").await;
}

#[tokio::test]
async fn a_clock_back_within_the_limit_resolves_it_once_and_the_date_is_not_alerted_again() {
    let app = spawn_app().await;
    measured(&app.pool, "r1", 0.1).await;
    measured(&app.pool, "r2", -7.0).await;
    let (_, today) = database_now(&app.pool).await;
    let reports = three_evaluate(&app, false).await;
    assert_eq!(
        raised(&reports),
        [(
            AlertKind::ClockSkew,
            "replica r2's clock is 7.0 s behind the database's (limit 5 s)".to_owned()
        )]
    );

    // Settling its date is no cure for a clock, unlike for FAILED and MISSED.
    execution(&app.pool, &today.to_string(), "SUCCESS", "1 minute").await;
    let reports = three_evaluate(&app, false).await;
    assert!(resolved(&reports).is_empty(), "{reports:?}");

    measured(&app.pool, "r2", -0.3).await;
    let reports = three_evaluate(&app, false).await;
    assert_eq!(resolved(&reports), [(AlertKind::ClockSkew, AlertState::Resolved)]);
    assert!(raised(&reports).is_empty(), "{reports:?}");

    // Off again the same business date: the metric and the measurements show it, the alert,
    // raised once per kind, task and date (CONTRACT §3.1), does not come back.
    measured(&app.pool, "r2", -9.0).await;
    three_evaluate_and_leave(&app, today, "RESOLVED").await;
}

#[tokio::test]
async fn a_skewed_replica_that_stops_measuring_stops_counting_after_three_probe_intervals() {
    let app = spawn_app().await;
    let rules = rules(false);
    measured(&app.pool, "r2", 10_800.0).await;
    let (now, _) = database_now(&app.pool).await;
    assert_eq!(evaluate_at(&app.pool, &rules, now).await.unwrap().raised.len(), 1);

    // Two probe intervals without a measurement (a database blip): still counted.
    let report = evaluate_at(&app.pool, &rules, now + TimeDelta::minutes(2))
        .await
        .unwrap();
    assert!(report.raised.is_empty() && report.resolved.is_empty(), "{report:?}");
    // Past three: the replica died, or cannot reach the database; its clock no longer counts.
    let report = evaluate_at(&app.pool, &rules, now + TimeDelta::minutes(4))
        .await
        .unwrap();
    assert_eq!(report.resolved.len(), 1, "{report:?}");
    assert_eq!(report.resolved[0].kind, AlertKind::ClockSkew);
}

#[tokio::test]
async fn an_alert_active_since_an_earlier_date_is_the_one_alert_while_the_clock_stays_off() {
    let app = spawn_app().await;
    // Raised yesterday, by the database's date, and the clock is still off today.
    let yesterday: NaiveDate = sqlx::query_scalar(
        "insert into alert (kind, task_name, business_date, detail, raised_at)
         values ('CLOCK_SKEW', 'settle-fines', (now() at time zone 'UTC')::date - 1, 'replica r2 ...',
                 now() - interval '1 day')
         returning business_date",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    measured(&app.pool, "r2", 12.0).await;
    three_evaluate_and_leave(&app, yesterday, "ACTIVE").await;

    measured(&app.pool, "r2", 1.0).await;
    let reports = three_evaluate(&app, false).await;
    assert_eq!(resolved(&reports), [(AlertKind::ClockSkew, AlertState::Resolved)]);
    assert_eq!(
        alerts(&app.pool).await,
        [("CLOCK_SKEW".to_owned(), yesterday, "RESOLVED".to_owned())]
    );
}

#[tokio::test]
async fn replicas_on_the_database_clock_record_their_measurements_and_raise_nothing() {
    let app = spawn_app().await;
    // The real probe of three replicas on this host's clock: one measurement each.
    for instance_id in ["r1", "r2", "r3"] {
        let stop = CancellationToken::new();
        stop.cancel();
        let time = DatabaseTime::new(Clock::system(), app.pool.clone());
        finesettle::telemetry::spawn_clock_skew_probe(time, instance_id.to_owned(), stop)
            .await
            .unwrap();
    }
    let mut measurements = replica_clocks::latest(&app.pool).await.unwrap();
    // The test app's own probe ("test-replica") may have measured too.
    measurements.retain(|m| m.instance_id != app.settings.instance_id);
    let names: Vec<_> = measurements.iter().map(|m| m.instance_id.as_str()).collect();
    assert_eq!(names, ["r1", "r2", "r3"]);
    assert!(
        measurements.iter().all(|m| m.skew_seconds.abs() < 1.0),
        "{measurements:?}"
    );

    let reports = three_evaluate(&app, false).await;
    assert!(raised(&reports).is_empty(), "{reports:?}");
}

#[tokio::test]
async fn a_webhook_receives_the_raise_and_the_resolve() {
    let app = spawn_app().await;
    measured(&app.pool, "r2", 30.0).await;
    three_evaluate(&app, true).await;
    measured(&app.pool, "r2", 0.0).await;
    three_evaluate(&app, true).await;

    let receiver = Receiver::start(0).await;
    let webhook = receiver.webhook();
    let policy = slow_retry_policy();
    // The resolve waits for its raise to be delivered.
    for _ in 0..2 {
        assert_eq!(deliver_due(&app.pool, &webhook, &policy).await.unwrap().delivered, 1);
    }
    let posts = receiver.accepted();
    let events: Vec<_> = posts
        .iter()
        .map(|p| {
            (
                p.body["event"].clone(),
                p.body["alert"]["kind"].clone(),
                p.body["alert"]["state"].clone(),
            )
        })
        .collect();
    assert_eq!(
        events,
        [
            ("raised".into(), "CLOCK_SKEW".into(), "ACTIVE".into()),
            ("resolved".into(), "CLOCK_SKEW".into(), "RESOLVED".into())
        ]
    );
    assert_eq!(
        posts[0].body["alert"]["detail"],
        "replica r2's clock is 30.0 s ahead of the database's (limit 5 s)"
    );
}

/// The real probe of a replica whose clock runs three hours fast (the clock seam of issue 19)
/// records a skew of three hours, which the rule turns into a CLOCK_SKEW alert naming it.
#[tokio::test]
async fn the_probe_of_a_replica_three_hours_fast_records_three_hours() {
    let app = spawn_app().await;
    let stop = CancellationToken::new();
    stop.cancel();
    let time = DatabaseTime::new(Clock::shifted(TimeDelta::hours(3)), app.pool.clone());
    finesettle::telemetry::spawn_clock_skew_probe(time, "fast".to_owned(), stop)
        .await
        .unwrap();
    let measurements = replica_clocks::latest(&app.pool).await.unwrap();
    let fast = measurements.iter().find(|m| m.instance_id == "fast").expect("recorded");
    assert!((fast.skew_seconds - 10_800.0).abs() < 2.0, "{fast:?}");
}

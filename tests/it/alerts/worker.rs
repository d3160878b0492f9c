//! The worker loop end to end: it registers the job, raises, delivers, resolves, and stops.

use std::time::Duration;

use finesettle::alerts::{AlertWorkerConfig, run_alert_worker};
use tokio_util::sync::CancellationToken;

use crate::alerts::support::{Receiver, count, execution, rules};
use crate::common::checks::eventually;
use crate::common::spawn_app;

/// How long the deliveries may take: a hang, not a timing assertion.
const WITHIN: Duration = Duration::from_secs(60);

#[tokio::test]
async fn the_worker_raises_delivers_resolves_and_stops() {
    let app = spawn_app().await;
    let receiver = Receiver::start(1).await;
    let delivery = finesettle::alerts::DeliveryPolicy {
        backoff: finesettle::backoff::Backoff::new(Duration::ZERO, Duration::ZERO),
        ..Default::default()
    };
    let config = AlertWorkerConfig {
        rules: rules(true),
        webhook: Some(receiver.webhook()),
        evaluate_every: Duration::from_millis(100),
        deliver_every: Duration::from_millis(100),
        delivery,
    };
    execution(&app.pool, "2026-06-01", "FAILED", "20 minutes").await;
    let stop = CancellationToken::new();
    let worker = tokio::spawn(run_alert_worker(app.pool.clone(), config, stop.clone()));

    eventually("the raise to be delivered", WITHIN, async || {
        receiver.accepted().len() == 1
    })
    .await;
    assert_eq!(count(&app.pool, "select count(*) from job_registration").await, 1);
    execution(&app.pool, "2026-06-01", "SUCCESS", "1 minute").await;
    eventually("the resolve to be delivered", WITHIN, async || {
        receiver.accepted().len() == 2
    })
    .await;
    let events: Vec<_> = receiver.accepted().iter().map(|p| p.body["event"].clone()).collect();
    assert_eq!(events, ["raised", "resolved"]);
    // The first POST failed and was retried: three requests, two accepted, one per event.
    assert_eq!(receiver.received().len(), 3);

    stop.cancel();
    tokio::time::timeout(Duration::from_secs(60), worker)
        .await
        .expect("the worker stops when told")
        .expect("the worker does not panic");
}

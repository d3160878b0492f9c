//! The log event each raise and resolve emits (what an OpenTelemetry log bridge exports), and
//! the webhook URL's secrets kept out of every log line.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::{Arc, Mutex};

use finesettle::alerts::{deliver_due, evaluate_once};
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::{Context, SubscriberExt};

use crate::alerts::support::{Receiver, execution, replica_pool, rules, slow_retry_policy};
use crate::common::spawn_app;

#[derive(Debug, Clone)]
struct Captured {
    target: String,
    level: Level,
    fields: BTreeMap<String, String>,
}

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<Captured>>>);

impl Capture {
    fn alert_events(&self, message: &str) -> Vec<Captured> {
        let events = self.0.lock().unwrap();
        events
            .iter()
            .filter(|e| e.fields.get("message").map(String::as_str) == Some(message))
            .cloned()
            .collect()
    }
}

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

impl<S: Subscriber> Layer<S> for Capture {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        self.0.lock().unwrap().push(Captured {
            target: event.metadata().target().to_owned(),
            level: *event.metadata().level(),
            fields,
        });
    }
}

// Single-threaded runtime: the capturing subscriber is this thread's default.
#[tokio::test(flavor = "current_thread")]
async fn each_raise_and_resolve_is_one_log_event_with_dotted_fields() {
    let capture = Capture::default();
    let _guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(capture.clone()));
    let app = spawn_app().await;
    let rules = rules(true);
    let (two, three) = (
        replica_pool(app.database.url()).await,
        replica_pool(app.database.url()).await,
    );
    execution(&app.pool, "2026-06-01", "FAILED", "20 minutes").await;

    let (a, b, c) = tokio::join!(
        evaluate_once(&app.pool, &rules),
        evaluate_once(&two, &rules),
        evaluate_once(&three, &rules)
    );
    let alert_id = [a.unwrap(), b.unwrap(), c.unwrap()]
        .iter()
        .flat_map(|r| r.raised.iter().map(|a| a.id))
        .next()
        .unwrap();
    let raised = capture.alert_events("alert raised");
    assert_eq!(raised.len(), 1, "{raised:?}");
    let event = &raised[0];
    assert_eq!(event.target, "finesettle::alerts");
    assert_eq!(event.level, Level::ERROR);
    assert_eq!(event.fields["alert.id"], alert_id.to_string());
    assert_eq!(event.fields["alert.kind"], "FAILED");
    assert_eq!(event.fields["alert.task_name"], "settle-fines");
    assert_eq!(event.fields["alert.business_date"], "2026-06-01");
    assert!(event.fields["alert.detail"].contains("failed"), "{event:?}");

    execution(&app.pool, "2026-06-01", "SUCCESS", "1 minute").await;
    let (a, b, c) = tokio::join!(
        evaluate_once(&app.pool, &rules),
        evaluate_once(&two, &rules),
        evaluate_once(&three, &rules)
    );
    let (a, b, c) = (a.unwrap(), b.unwrap(), c.unwrap());
    assert_eq!(a.resolved.len() + b.resolved.len() + c.resolved.len(), 1);
    let resolved = capture.alert_events("alert resolved");
    assert_eq!(resolved.len(), 1, "{resolved:?}");
    assert_eq!(resolved[0].level, Level::INFO);
    assert_eq!(resolved[0].fields["alert.id"], alert_id.to_string());
    assert_eq!(capture.alert_events("alert raised").len(), 1);

    // Deliveries fail, then succeed: their log lines never show the URL's secrets.
    let receiver = Receiver::start(1).await;
    let webhook = receiver.webhook();
    assert!(!format!("{webhook:?}").contains("s3cret"));
    deliver_due(&app.pool, &webhook, &slow_retry_policy()).await.unwrap();
    sqlx::query("update alert_delivery set next_attempt_at = now()")
        .execute(&app.pool)
        .await
        .unwrap();
    deliver_due(&app.pool, &webhook, &slow_retry_policy()).await.unwrap();
    deliver_due(&app.pool, &webhook, &slow_retry_policy()).await.unwrap();
    assert_eq!(receiver.accepted().len(), 2);
    assert_eq!(
        capture
            .alert_events("alert notification not delivered; will retry")
            .len(),
        1
    );
    assert_eq!(capture.alert_events("alert notification delivered").len(), 2);
    let events = capture.0.lock().unwrap();
    for event in events.iter() {
        let text = format!("{:?}", event.fields);
        for secret in ["hook-user", "s3cret", "t0ken", "/hooks/finesettle"] {
            assert!(!text.contains(secret), "{secret} logged: {text}");
        }
    }
}

//! A replica of the service on one of the cluster's nodes (or a proxy in front of them), built and
//! run as `serve` builds and runs it, with the scheduler off: the test drives the job through
//! the API and the failover check directly.

use std::time::Duration;

use finesettle::config::Settings;
use finesettle::failover::{FailoverRules, FailoverWatch};
use finesettle::startup::Application;
use serde_json::Value;
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;

use crate::common::{ADMIN_TOKEN, test_settings};

pub struct Replica {
    pub address: String,
    pub pool: PgPool,
    /// The replica's memory of the database, which its failover check reads and writes.
    pub watch: FailoverWatch,
    pub settings: Settings,
    client: reqwest::Client,
    stop: CancellationToken,
}

impl Replica {
    /// Starts `instance_id` on `database_url`; every lock is free again as soon as it is released
    /// (no `at_least_for`), so the test may run dates back to back.
    pub async fn spawn(database_url: &str, instance_id: &str) -> Replica {
        finesettle::telemetry::init();
        let mut settings = test_settings(database_url);
        settings.instance_id = instance_id.to_owned();
        settings.job.lock_at_least_for = Duration::ZERO;
        let application = Application::build(settings.clone()).await.expect("the replica starts");
        let address = format!("http://127.0.0.1:{}", application.port());
        let pool = application.state().pool.clone();
        let watch = application.state().failover.clone();
        let stop = CancellationToken::new();
        let server_stop = stop.clone();
        tokio::spawn(application.run_until_stopped(async move { server_stop.cancelled().await }));
        Replica {
            address,
            pool,
            watch,
            settings,
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(30))
                .build()
                .unwrap(),
            stop,
        }
    }

    pub fn rules(&self) -> FailoverRules {
        FailoverRules::from_settings(&self.settings)
    }

    /// GET `path` as the admin: the status and the JSON body.
    pub async fn get(&self, path: &str) -> (u16, Value) {
        let response = self
            .client
            .get(format!("{}{path}", self.address))
            .bearer_auth(ADMIN_TOKEN)
            .send()
            .await
            .expect("request sent");
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    /// POST `body` to `path` as the admin: the status and the JSON body.
    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let response = self
            .client
            .post(format!("{}{path}", self.address))
            .bearer_auth(ADMIN_TOKEN)
            .json(&body)
            .send()
            .await
            .expect("request sent");
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

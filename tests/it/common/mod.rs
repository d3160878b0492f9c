//! The test harness and the helpers shared by the areas of the integration tests.
//!
//! Tests talk to a real PostgreSQL: the one in `DATABASE_URL` when it answers (CI and the dev
//! machine), otherwise one started with testcontainers (a laptop with Docker). Every test gets a
//! database of its own, created empty, migrated by the application itself, and dropped when the
//! test's `TestApp` goes out of scope.

pub mod containers;
pub mod database;
pub mod fixtures;
/// A Patroni + etcd + HAProxy cluster of three PostgreSQL nodes, for the `ha` tests.
pub mod ha;
pub mod images;
pub mod proxy;
pub mod redis;
pub mod triggers;

// The settlement tests' data generators, oracle and runners, which the replica, container and
// upgrade tests use too.
pub mod data;
pub mod oracle;
pub mod settlement;

// The process tests' harness, seed data, slow dates and end checks, which the container and
// upgrade tests use too.
pub mod checks;
pub mod process;
pub mod seed;
pub mod slow;

use std::time::Duration;

use finesettle::clock::Clock;
use finesettle::config::{ApiTokens, Role, Settings};
use finesettle::startup::Application;
use reqwest::{Method, StatusCode};
use serde_json::Value;
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;

pub const ADMIN_TOKEN: &str = "test-admin-token-0123456789";
pub const LIBRARIAN_TOKEN: &str = "test-librarian-token-0123456789";
pub const READER_TOKEN: &str = "test-reader-token-0123456789";

/// Settings for a test app on `database_url`: port 0, scheduler off, known tokens.
pub fn test_settings(database_url: &str) -> Settings {
    let mut settings = Settings::from_lookup(|_| None).expect("defaults are valid");
    settings.database_url = database_url.to_owned();
    settings.http_addr = "127.0.0.1:0".parse().unwrap();
    settings.scheduler_enabled = false;
    settings.instance_id = "test-replica".to_owned();
    settings.db_max_connections = 5;
    let mut tokens = ApiTokens::default();
    tokens.add(Role::Admin, ADMIN_TOKEN);
    tokens.add(Role::Librarian, LIBRARIAN_TOKEN);
    tokens.add(Role::Reader, READER_TOKEN);
    settings.api_tokens = tokens;
    settings
}

/// A running application on its own database.
pub struct TestApp {
    pub address: String,
    pub port: u16,
    pub pool: PgPool,
    pub settings: Settings,
    /// The settlement job of this app, to fire it directly (tests with the scheduler off).
    pub job: finesettle::jobs::SettleJob,
    pub client: reqwest::Client,
    stop: CancellationToken,
    server: Option<tokio::task::JoinHandle<anyhow::Result<()>>>,
    // Dropped last: drops the database.
    pub database: database::TestDatabase,
}

/// Starts the application on a fresh database with the default test settings.
pub async fn spawn_app() -> TestApp {
    spawn_app_with(|_| {}).await
}

/// Starts the application on a fresh database, letting the test adjust the settings first.
pub async fn spawn_app_with(customize: impl FnOnce(&mut Settings)) -> TestApp {
    let database = database::TestDatabase::create().await;
    spawn_on(database, Clock::system(), customize).await
}

/// Starts the application on a fresh database with `REDIS_URL` naming a Redis logical database
/// of its own (see [`redis`]), which the test may flush. Keep the `TestRedis` alive as long as
/// the app: dropping it empties and releases the database.
pub async fn spawn_app_with_redis(customize: impl FnOnce(&mut Settings)) -> (TestApp, self::redis::TestRedis) {
    let redis = self::redis::TestRedis::create().await;
    let url = redis.url();
    let app = spawn_app_with(|settings| {
        settings.redis_url = Some(url);
        customize(settings);
    })
    .await;
    (app, redis)
}

/// Starts another replica on the same database as `app`.
pub async fn spawn_replica(app: &TestApp, customize: impl FnOnce(&mut Settings)) -> TestApp {
    spawn_on(app.database.share(), Clock::system(), customize).await
}

/// Starts a replica on `database` whose own wall clock is `clock` (shifted, or jumped by the test
/// later): a host without NTP, a VM resumed after a day.
pub async fn spawn_with_clock(
    database: database::TestDatabase,
    clock: Clock,
    customize: impl FnOnce(&mut Settings),
) -> TestApp {
    spawn_on(database, clock, customize).await
}

/// Starts the application on `database` (created by the test, perhaps already seeded).
pub async fn spawn_on_database(database: database::TestDatabase, customize: impl FnOnce(&mut Settings)) -> TestApp {
    spawn_on(database, Clock::system(), customize).await
}

async fn spawn_on(database: database::TestDatabase, clock: Clock, customize: impl FnOnce(&mut Settings)) -> TestApp {
    finesettle::telemetry::init();
    let mut settings = test_settings(database.url());
    customize(&mut settings);
    let application = Application::build_with_clock(settings.clone(), clock)
        .await
        .expect("application builds");
    let port = application.port();
    let pool = application.state().pool.clone();
    let job = application.state().job.clone();
    let stop = CancellationToken::new();
    let server_stop = stop.clone();
    let server = tokio::spawn(application.run_until_stopped(async move { server_stop.cancelled().await }));
    TestApp {
        address: format!("http://127.0.0.1:{port}"),
        port,
        pool,
        settings,
        job,
        client: reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .unwrap(),
        stop,
        server: Some(server),
        database,
    }
}

/// A response as the tests see it: status, content type, and the JSON body (Null when empty).
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub content_type: String,
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
}

impl Reply {
    /// Asserts an RFC 9457 problem with this status and returns its body.
    #[track_caller]
    pub fn problem(&self, status: u16) -> &Value {
        assert_eq!(self.status.as_u16(), status, "unexpected status, body: {}", self.body);
        assert_eq!(self.content_type, "application/problem+json", "body: {}", self.body);
        assert_eq!(self.body["status"], status, "body: {}", self.body);
        assert!(
            self.body["title"].is_string() && self.body["detail"].is_string(),
            "body: {}",
            self.body
        );
        &self.body
    }

    /// Asserts a success with this status and returns the body.
    #[track_caller]
    pub fn ok(&self, status: u16) -> &Value {
        assert_eq!(self.status.as_u16(), status, "unexpected status, body: {}", self.body);
        &self.body
    }

    /// Asserts an RFC 9457 problem with this status whose `code` is `code`; returns its body.
    #[track_caller]
    pub fn problem_code(&self, status: u16, code: &str) -> &Value {
        let body = self.problem(status);
        assert_eq!(body["code"], code, "body: {body}");
        body
    }

    /// The fields a 422 named, sorted (for a problem naming several at once).
    pub fn sorted_invalid_fields(&self) -> Vec<String> {
        let mut fields = self.invalid_fields();
        fields.sort();
        fields
    }

    /// The fields a 422 named.
    pub fn invalid_fields(&self) -> Vec<String> {
        self.problem(422);
        self.body["errors"]
            .as_array()
            .map(|errors| {
                errors
                    .iter()
                    .filter_map(|e| e["field"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl TestApp {
    pub async fn request(&self, method: Method, path: &str, token: Option<&str>, body: Option<Value>) -> Reply {
        let mut request = self.client.request(method, format!("{}{}", self.address, path));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        into_reply(request.send().await.expect("request sent")).await
    }

    /// Sends a raw body with a content type (malformed JSON, wrong media types...).
    pub async fn send_raw(
        &self,
        method: Method,
        path: &str,
        token: &str,
        content_type: &str,
        body: impl Into<reqwest::Body>,
    ) -> Reply {
        let request = self
            .client
            .request(method, format!("{}{}", self.address, path))
            .bearer_auth(token)
            .header("content-type", content_type)
            .body(body);
        into_reply(request.send().await.expect("request sent")).await
    }

    pub async fn get(&self, path: &str) -> Reply {
        self.request(Method::GET, path, Some(ADMIN_TOKEN), None).await
    }

    pub async fn post(&self, path: &str, body: Value) -> Reply {
        self.request(Method::POST, path, Some(ADMIN_TOKEN), Some(body)).await
    }

    /// A GET with `token` (none, a wrong one, or a role's).
    pub async fn get_as(&self, path: &str, token: Option<&str>) -> Reply {
        self.request(Method::GET, path, token, None).await
    }

    /// A POST of `body` with `token` (none, a wrong one, or a role's).
    pub async fn post_as(&self, path: &str, token: Option<&str>, body: Value) -> Reply {
        self.request(Method::POST, path, token, Some(body)).await
    }

    /// A librarian's POST of `text` as `content_type` (malformed JSON, wrong media types...).
    pub async fn post_text(&self, path: &str, content_type: &str, text: impl Into<reqwest::Body>) -> Reply {
        self.send_raw(Method::POST, path, LIBRARIAN_TOKEN, content_type, text)
            .await
    }

    /// Asserts that a librarian's POST to `path` of the truncated JSON `malformed` is a 400 and of
    /// `plain` as text/plain a 415.
    pub async fn assert_bad_bodies_refused(&self, path: &str, malformed: &str, plain: &str) {
        self.post_text(path, "application/json", malformed.to_owned())
            .await
            .problem(400);
        self.post_text(path, "text/plain", plain.to_owned()).await.problem(415);
    }

    pub async fn post_with_key(&self, path: &str, key: &str, body: Value) -> Reply {
        let request = self
            .client
            .post(format!("{}{}", self.address, path))
            .bearer_auth(LIBRARIAN_TOKEN)
            .header("idempotency-key", key)
            .json(&body);
        into_reply(request.send().await.expect("request sent")).await
    }

    // Typed helpers: each creates a resource through the API and returns its JSON.

    pub async fn create_member(&self, name: &str, email: &str) -> Value {
        self.post("/api/v1/members", serde_json::json!({ "name": name, "email": email }))
            .await
            .ok(201)
            .clone()
    }

    pub async fn create_book(&self, title: &str) -> Value {
        self.post("/api/v1/books", serde_json::json!({ "title": title }))
            .await
            .ok(201)
            .clone()
    }

    /// Lends `book_id` to `member_id` from today until `due_on`; returns the loan.
    pub async fn create_loan(&self, member_id: i64, book_id: i64, due_on: chrono::NaiveDate) -> Value {
        let body = serde_json::json!({ "member_id": member_id, "book_id": book_id, "due_on": due_on });
        self.post("/api/v1/loans", body).await.ok(201).clone()
    }

    /// Lends `book_id` to `member_id` from `borrowed_on` (a past date makes an overdue loan).
    pub async fn create_loan_from(
        &self,
        member_id: i64,
        book_id: i64,
        borrowed_on: chrono::NaiveDate,
        due_on: chrono::NaiveDate,
    ) -> Value {
        let body = serde_json::json!({
            "member_id": member_id, "book_id": book_id, "borrowed_on": borrowed_on, "due_on": due_on,
        });
        self.post("/api/v1/loans", body).await.ok(201).clone()
    }

    /// A new member named `name` with the email `<name in lower case>@example.org`; returns its id.
    pub async fn member_id(&self, name: &str) -> i64 {
        let email = format!("{}@example.org", name.to_lowercase());
        self.create_member(name, &email).await["id"].as_i64().unwrap()
    }

    /// GET of a member by id, as an admin.
    pub async fn get_member(&self, member_id: i64) -> Reply {
        self.get(&format!("/api/v1/members/{member_id}")).await
    }

    /// The member's `balance_cents` as the API reports it.
    pub async fn balance(&self, member_id: i64) -> i64 {
        self.get_member(member_id).await.ok(200)["balance_cents"]
            .as_i64()
            .unwrap()
    }

    /// POST of a loan body as an admin (the reply is the test's to check).
    pub async fn post_loan(&self, body: &Value) -> Reply {
        self.post("/api/v1/loans", body.clone()).await
    }

    /// Returns a loan now; returns the returned loan.
    pub async fn return_loan(&self, loan_id: i64) -> Value {
        self.post(&format!("/api/v1/loans/{loan_id}/return"), serde_json::json!({}))
            .await
            .ok(200)
            .clone()
    }

    /// Today's business date by the database clock, as the service sees it.
    pub async fn today(&self) -> chrono::NaiveDate {
        finesettle::store::clock::business_today(&self.pool, self.settings.business_tz)
            .await
            .unwrap()
    }

    /// Row counts of every business table, to assert that a refused request changed nothing.
    pub async fn row_counts(&self) -> Vec<(String, i64)> {
        let mut counts = Vec::new();
        for table in [
            "member",
            "book",
            "loan",
            "fine_record",
            "ledger_entry",
            "idempotency_key",
            "task_execution",
            "task_lock",
        ] {
            let sql = format!("select count(*) from {table}");
            let n: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
                .fetch_one(&self.pool)
                .await
                .unwrap();
            counts.push((table.to_owned(), n));
        }
        counts
    }

    /// Stops the server and waits for it to finish.
    pub async fn stop(mut self) {
        self.stop.cancel();
        if let Some(server) = self.server.take() {
            server.await.expect("server task").expect("server stopped cleanly");
        }
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

pub async fn into_reply(response: reqwest::Response) -> Reply {
    let status = response.status();
    let headers = response.headers().clone();
    let content_type = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let bytes = response.bytes().await.expect("body read");
    let body = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes).unwrap_or(Value::String(String::from_utf8_lossy(&bytes).into_owned()))
    };
    Reply {
        status,
        content_type,
        headers,
        body,
    }
}

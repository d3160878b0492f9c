//! One fresh PostgreSQL database per test.

use std::sync::{Arc, OnceLock};

use sqlx::{Connection, PgConnection};
use testcontainers::{ContainerAsync, ImageExt};
use testcontainers_modules::postgres::Postgres;
use tokio::sync::OnceCell;

use super::{containers, images};

/// The server tests use: `DATABASE_URL`'s server when reachable, else the run's container.
static SERVER: OnceCell<String> = OnceCell::const_new();
/// The run's container, if any (removed by the run's reaper, not by this process).
static CONTAINER: OnceLock<ContainerAsync<Postgres>> = OnceLock::new();

const DEFAULT_SERVER: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// The URL of the server's maintenance database (`postgres`).
async fn server_url() -> &'static str {
    SERVER
        .get_or_init(|| async {
            let configured = std::env::var("DATABASE_URL").unwrap_or_else(|_| DEFAULT_SERVER.to_owned());
            let maintenance = with_database(&configured, "postgres");
            if PgConnection::connect(&maintenance).await.is_ok() {
                return maintenance;
            }
            eprintln!("PostgreSQL at {configured} is not reachable; using the test run's container");
            // The module's own default tag is PostgreSQL 11: the migrations need 13 or newer
            // (gen_random_uuid, drop database ... with (force)).
            let (name, tag) = images::postgres();
            // Trust, as the machine's own server: with a password, a connection the app was still
            // opening when its test ended sits in authentication (its runtime is blocked in the
            // database's drop), and `drop database ... with (force)` waits for it until the
            // server's authentication_timeout, a minute later.
            let postgres = Postgres::default().with_host_auth().with_name(name).with_tag(tag);
            let container = containers::shared(postgres, "postgres").await;
            let port = container.get_host_port_ipv4(5432).await.expect("container port");
            let host = container.get_host().await.expect("container host");
            let _ = CONTAINER.set(container);
            format!("postgres://postgres:postgres@{host}:{port}/postgres")
        })
        .await
}

/// `url` with its database name replaced.
fn with_database(url: &str, name: &str) -> String {
    let (base, _) = url.rsplit_once('/').expect("a database URL has a path");
    let query = url.split_once('?').map(|(_, q)| format!("?{q}")).unwrap_or_default();
    format!("{base}/{name}{query}")
}

/// A database created for one test, dropped when the last handle to it goes away.
pub struct TestDatabase {
    inner: Arc<Owned>,
}

struct Owned {
    url: String,
    maintenance_url: String,
    name: String,
}

impl TestDatabase {
    pub async fn create() -> Self {
        let maintenance_url = server_url().await.to_owned();
        let name = format!("finesettle_test_{}", uuid::Uuid::new_v4().simple());
        let mut conn = PgConnection::connect(&maintenance_url)
            .await
            .expect("connect to the test server");
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!("create database \"{name}\"")))
            .execute(&mut conn)
            .await
            .expect("create the test database");
        let url = with_database(&maintenance_url, &name);
        TestDatabase {
            inner: Arc::new(Owned {
                url,
                maintenance_url,
                name,
            }),
        }
    }

    pub fn url(&self) -> &str {
        &self.inner.url
    }

    /// The database's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The server's maintenance database (`postgres`): for what cannot run inside the test's own
    /// database (altering or recreating it).
    pub fn maintenance_url(&self) -> &str {
        &self.inner.maintenance_url
    }

    /// Another handle on the same database (for a second replica).
    pub fn share(&self) -> Self {
        TestDatabase {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        // Drop runs outside async context: use a thread with its own runtime. `with (force)`
        // ends any connection a stopped app left behind.
        let maintenance_url = self.maintenance_url.clone();
        let sql = format!("drop database if exists \"{}\" with (force)", self.name);
        let _ = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            runtime.block_on(async {
                let mut conn = PgConnection::connect(&maintenance_url).await.ok()?;
                sqlx::raw_sql(sqlx::AssertSqlSafe(sql)).execute(&mut conn).await.ok()
            })
        })
        .join();
    }
}

//! The stack every container test starts: a Docker network of its own, PostgreSQL, and three
//! replicas of the service's image serving with a fast cron, catching up a few weeks of dates.
//! The test reaches PostgreSQL through its published port; the replicas reach it by name.

use std::time::Duration;

use chrono::{Days, NaiveDate};
use chrono_tz::Asia::Shanghai;
use finesettle::domain::LoanTerms;
use sqlx::PgPool;
use testcontainers::core::WaitFor;
use testcontainers::runners::AsyncRunner;
use testcontainers::{ContainerAsync, GenericImage, ImageExt};
use testcontainers_modules::postgres::Postgres;

use crate::common::checks::{
    Attempt, Execution, assert_settled_exactly_once, attempts, caught_up_through, executions, poll_until, written_with,
};
use crate::common::containers::{self, Network, docker};
use crate::common::data::days;
use crate::common::images;
use crate::common::seed::{recent_loans, seed};
use crate::common::slow::slow_dates;

pub const REPLICAS: [&str; 3] = ["replica-a", "replica-b", "replica-c"];
/// Every two seconds, in every replica at the same instants.
const CRON: &str = "*/2 * * * * *";
/// Dates to catch up, a few per fire: the walk takes several fires and hand-overs.
const CATCH_UP_DAYS: u64 = 12;
const MAX_DAYS: u64 = 3;
/// The lease: a replica that stops renewing blocks the job for 4 s at most.
const LOCK_AT_MOST_FOR: &str = "4s";
/// Each date sleeps this long inside its fenced transaction (`slow_dates`): the tests find every
/// holder in the middle of a date.
const DATE_TAKES: Duration = Duration::from_millis(1500);
/// The module's default credentials (user, password and database `postgres`).
const POSTGRES_PASSWORD: &str = "postgres";

/// What a holder had written with its fencing token when the others took over from it
/// ([`crate::common::checks::written_with`]).
pub struct Written {
    token: i64,
    pub rows: Vec<String>,
}

/// A replica: its instance id and its container.
pub struct Replica {
    pub id: &'static str,
    pub container: ContainerAsync<GenericImage>,
}

/// One test's stack. Fields drop in order: the replicas before the database, the network last.
pub struct Stack {
    pub replicas: Vec<Replica>,
    pub postgres: ContainerAsync<Postgres>,
    pub network: Network,
    /// The test's own connection, through PostgreSQL's published port.
    pub pool: PgPool,
    pub loans: Vec<(i64, LoanTerms)>,
    /// The first date the job settles.
    pub start: NaiveDate,
    /// Yesterday in the business zone when the stack started: every run settles through it.
    pub yesterday: NaiveDate,
}

impl Stack {
    /// PostgreSQL, migrated and seeded with loans busiest in the weeks before today, its dates made
    /// slow; then the three replicas, each up once it logs `serving`.
    pub async fn start(test: &str, seed_number: u64) -> Stack {
        finesettle::telemetry::init();
        let suffix = &uuid::Uuid::new_v4().simple().to_string()[..8];
        let network = Network::create(&format!("finesettle-{test}-{suffix}"));
        let (name, tag) = images::postgres();
        let postgres = containers::label(
            Postgres::default()
                .with_name(name)
                .with_tag(tag)
                .with_network(&network.name)
                .with_container_name(format!("{}-postgres", network.name)),
        )
        .start()
        .await
        .expect("start PostgreSQL");
        let pool = connect(&postgres).await;
        finesettle::store::database::migrate(&pool).await.expect("migrate");

        let today = finesettle::store::clock::business_today(&pool, Shanghai).await.unwrap();
        let loans = seed(&pool, &recent_loans(seed_number, today)).await;
        slow_dates(&pool, DATE_TAKES).await;
        let start = today - Days::new(CATCH_UP_DAYS);

        let mut replicas = Vec::new();
        for id in REPLICAS {
            replicas.push(start_replica(&network, id, start).await);
        }
        Stack {
            replicas,
            postgres,
            network,
            pool,
            loans,
            start,
            yesterday: today.pred_opt().unwrap(),
        }
    }

    /// The replica `id`.
    pub fn replica(&self, id: &str) -> &Replica {
        self.replicas
            .iter()
            .find(|r| r.id == id)
            .expect("a replica of the stack")
    }

    /// A new connection pool after PostgreSQL restarted (its published port may have changed).
    pub async fn reconnect(&mut self) {
        self.pool = connect(&self.postgres).await;
    }

    /// Freezes the replica holding the lock at a moment when it has settled at least one date and
    /// has the next one RUNNING (`docker pause`, the cgroup freezer), and answers that execution.
    /// Between two dates the holder is let go on and caught again a little later.
    pub async fn freeze_holder_mid_date(&self) -> (&Replica, Execution) {
        poll_until(
            "a holder in the middle of a date, after settling one",
            Duration::from_secs(90),
            async || {
                let all = executions(&self.pool).await;
                let running = all.iter().find(|e| e.status == "RUNNING")?;
                let replica = self.replica(&running.instance_id);
                let settled = all.iter().any(|e| e.instance_id == replica.id && e.status == "SUCCESS");
                if !settled {
                    return None;
                }
                replica.container.pause().await.expect("docker pause");
                // A statement sent just before the freeze (a COMMIT, say) still completes on the
                // server; let it, so that what is read next is what the frozen holder left.
                tokio::time::sleep(Duration::from_millis(200)).await;
                let still = executions(&self.pool)
                    .await
                    .into_iter()
                    .find(|e| e.id == running.id && e.status == "RUNNING");
                if still.is_none() {
                    replica.container.unpause().await.expect("docker unpause");
                }
                still.map(|e| (replica, e))
            },
        )
        .await
    }

    /// Waits until every date through yesterday is settled and no execution is RUNNING, then
    /// checks: one SUCCESS per date from the start, fines equal to the oracle's, no CHARGE twice.
    pub async fn assert_caught_up(&self) {
        let settled_through = poll_until(
            "every date through yesterday settled, and nothing RUNNING",
            Duration::from_secs(180),
            async || caught_up_through(&executions(&self.pool).await, self.yesterday),
        )
        .await;
        assert_settled_exactly_once(&self.pool, &self.loans, &days(self.start, settled_through)).await;
    }

    /// Waits until the others have caught up without the holder of `execution` (see
    /// [`Stack::assert_caught_up`]), checks that they closed its date FAILED, and answers what
    /// the holder had written with its token by then.
    pub async fn assert_taken_over_from(&self, execution: &Execution) -> Written {
        self.assert_caught_up().await;
        let all = executions(&self.pool).await;
        let closed = all.iter().find(|e| e.id == execution.id).unwrap();
        assert_eq!(closed.status, "FAILED", "{closed:?}");
        let token = execution.fencing_token;
        Written {
            token,
            rows: written_with(&self.pool, token).await,
        }
    }

    /// Waits until `holder`, back after the others took over from it, records an attempt that
    /// `wanted` picks; then asserts that it wrote nothing with its old token beyond `before`.
    pub async fn assert_back_without_writing(
        &self,
        holder: &Replica,
        before: &Written,
        wanted: impl Fn(&Attempt) -> bool,
    ) {
        let what = format!("{} to record an attempt after it came back", holder.id);
        poll_until(&what, Duration::from_secs(90), async || {
            attempts(&self.pool)
                .await
                .iter()
                .any(|a| a.instance_id == holder.id && wanted(a))
                .then_some(())
        })
        .await;
        assert_eq!(
            written_with(&self.pool, before.token).await,
            before.rows,
            "{} wrote with its old token {} after it came back\n{}",
            holder.id,
            before.token,
            self.logs(holder).await
        );
    }

    /// `docker stop` of every replica still running: each exits 0 (SIGTERM lets a running date
    /// finish and releases the lock).
    pub async fn stop_all(&self) {
        for replica in &self.replicas {
            if !replica.container.is_running().await.unwrap_or(false) {
                continue;
            }
            replica
                .container
                .stop_with_timeout(Some(40))
                .await
                .expect("docker stop");
            let code = replica.container.exit_code().await.expect("the exit code");
            assert_eq!(
                code,
                Some(0),
                "{} exited with {code:?}\n{}",
                replica.id,
                self.logs(replica).await
            );
        }
    }

    /// Everything a replica logged (JSON lines on stderr, the CLI's on stdout).
    pub async fn logs(&self, replica: &Replica) -> String {
        let stdout = replica.container.stdout_to_vec().await.unwrap_or_default();
        let stderr = replica.container.stderr_to_vec().await.unwrap_or_default();
        format!(
            "--- {} stdout\n{}--- stderr\n{}",
            replica.id,
            String::from_utf8_lossy(&stdout),
            String::from_utf8_lossy(&stderr)
        )
    }

    /// `docker network disconnect`: the container keeps running, its packets go nowhere.
    pub fn disconnect(&self, replica: &Replica) {
        docker(&["network", "disconnect", &self.network.name, replica.container.id()]);
    }

    pub fn connect(&self, replica: &Replica) {
        docker(&["network", "connect", &self.network.name, replica.container.id()]);
    }
}

/// A replica of the service's image on `network`, serving with the fast cron from `start`.
async fn start_replica(network: &Network, id: &'static str, start: NaiveDate) -> Replica {
    let (name, tag) = images::finesettle();
    let database_url = format!(
        "postgres://postgres:{POSTGRES_PASSWORD}@{}-postgres:5432/postgres",
        network.name
    );
    let request = GenericImage::new(name, tag)
        .with_wait_for(WaitFor::message_on_stderr("\"serving\""))
        .with_network(&network.name)
        .with_container_name(format!("{}-{id}", network.name))
        .with_env_var("DATABASE_URL", database_url)
        .with_env_var("FINESETTLE_INSTANCE_ID", id)
        .with_env_var("FINESETTLE_SETTLE_CRON", CRON)
        .with_env_var("FINESETTLE_SETTLE_START_DATE", start.to_string())
        .with_env_var("FINESETTLE_BACKFILL_MAX_DAYS", MAX_DAYS.to_string())
        .with_env_var("FINESETTLE_LOCK_BACKEND", "postgres")
        .with_env_var("FINESETTLE_LOCK_AT_MOST_FOR", LOCK_AT_MOST_FOR)
        // Shorter than the cron period: a fire that ends at once is not repeated by a replica
        // whose trigger of the same slot comes a moment later.
        .with_env_var("FINESETTLE_LOCK_AT_LEAST_FOR", "1s")
        .with_env_var("FINESETTLE_SETTLE_BATCH_SIZE", "200")
        .with_env_var("FINESETTLE_SHUTDOWN_GRACE", "20s")
        .with_env_var("FINESETTLE_DB_MAX_CONNECTIONS", "4")
        .with_env_var("RUST_LOG", "info,sqlx=warn");
    let container = containers::label(request)
        .start()
        .await
        .unwrap_or_else(|e| panic!("start {id} from {name}:{tag} (built by scripts/build-image?): {e}"));
    Replica { id, container }
}

/// A pool on the container's database through its published port.
async fn connect(postgres: &ContainerAsync<Postgres>) -> PgPool {
    let port = postgres.get_host_port_ipv4(5432).await.expect("the published port");
    let host = postgres.get_host().await.expect("the container's host");
    let url = format!("postgres://postgres:{POSTGRES_PASSWORD}@{host}:{port}/postgres");
    poll_until(
        "PostgreSQL to accept connections",
        Duration::from_secs(30),
        async || finesettle::store::database::connect(&url, 4).await.ok(),
    )
    .await
}

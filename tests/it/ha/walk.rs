//! The scenario both HA tests share: three `finesettle serve` processes on the cluster, through
//! HAProxy, catching up two weeks of slowed dates on a fast cron while a client posts keyed
//! payments; a fault in the middle; then the end checks and the figures.

use std::time::Duration;

use chrono::{Days, NaiveDate};
use chrono_tz::Asia::Shanghai;
use sqlx::PgPool;
use sqlx::postgres::PgPoolOptions;

use crate::common::checks::{assert_settled_exactly_once, caught_up_through, poll_until, try_executions};
use crate::common::data::days;
use crate::common::ha::{Fault, HaCluster, PrimaryWatch, Replication};
use crate::common::process::{Finesettle, Replica};
use crate::common::seed::{Loans, recent_loans, seed};
use crate::common::slow::slow_dates;
use crate::ha::payments::{Payments, Record};

const REPLICAS: [&str; 3] = ["replica-a", "replica-b", "replica-c"];
/// The database the service uses on the cluster (it creates it at start).
const DATABASE: &str = "finesettle";
/// Every two seconds, in every replica at the same instants.
const CRON: &str = "*/2 * * * * *";
/// Dates to catch up, a few per fire: the walk takes several fires and spans the fault.
const CATCH_UP_DAYS: u64 = 12;
const MAX_DAYS: u64 = 3;
/// Each date sleeps this long inside its fenced transaction: a fault finds a date running.
const DATE_TAKES: Duration = Duration::from_millis(1500);
/// The walk, the fault, and the walk again after it, on a busy machine.
const CATCH_UP_WITHIN: Duration = Duration::from_secs(60);
/// The bound on everything the tests wait for after the fault.
const AFTER_FAULT_WITHIN: Duration = Duration::from_secs(30);

/// A running scenario. Fields drop in order: the replicas before the cluster under them.
pub struct Walk {
    replicas: Vec<Replica>,
    bases: Vec<String>,
    /// The test's own pool, through the proxy; its reads tolerate the failover.
    pool: PgPool,
    loans: Loans,
    start: NaiveDate,
    yesterday: NaiveDate,
    watch: PrimaryWatch,
    pub cluster: HaCluster,
}

impl Walk {
    /// A synchronous cluster, its database migrated and seeded with loans busiest in the weeks
    /// before today, dates made slow; then the three replicas, each up once it logs `serving`.
    pub async fn start(seed_number: u64) -> Walk {
        Self::start_on(Replication::Synchronous, seed_number).await
    }

    /// [`Walk::start`] on a cluster replicating as `replication`.
    pub async fn start_on(replication: Replication, seed_number: u64) -> Walk {
        finesettle::telemetry::init();
        let cluster = HaCluster::start(replication).await;
        let url = cluster.url(DATABASE);
        let setup = finesettle::store::database::connect(&url, 2)
            .await
            .expect("connect through the proxy");
        finesettle::store::database::migrate(&setup).await.expect("migrate");
        let today = finesettle::store::clock::business_today(&setup, Shanghai)
            .await
            .unwrap();
        let loans = seed(&setup, &recent_loans(seed_number, today)).await;
        slow_dates(&setup, DATE_TAKES).await;
        setup.close().await;
        let start = today - Days::new(CATCH_UP_DAYS);

        let mut replicas = Vec::new();
        let mut bases = Vec::new();
        for id in REPLICAS {
            let mut replica = Finesettle::new(&url, id)
                .env("FINESETTLE_SETTLE_CRON", CRON)
                .env("FINESETTLE_SETTLE_START_DATE", start.to_string())
                .env("FINESETTLE_BACKFILL_MAX_DAYS", MAX_DAYS.to_string())
                .env("FINESETTLE_LOCK_AT_MOST_FOR", "4s")
                // Shorter than the cron period: a fire that ends at once is not repeated by a
                // replica whose trigger of the same slot comes a moment later.
                .env("FINESETTLE_LOCK_AT_LEAST_FOR", "1s")
                .env("FINESETTLE_SETTLE_BATCH_SIZE", "200")
                .spawn(&["serve"]);
            bases.push(replica.base_url().await);
            replicas.push(replica);
        }
        Walk {
            replicas,
            bases,
            pool: reading_pool(&url),
            loans,
            start,
            yesterday: today.pred_opt().unwrap(),
            watch: PrimaryWatch::start(cluster.url("postgres")),
            cluster,
        }
    }

    /// Starts the client posting payments to every replica.
    pub async fn start_payments(&self) -> Payments {
        let members: Vec<i64> = sqlx::query_scalar("select id from member order by id")
            .fetch_all(&self.pool)
            .await
            .unwrap();
        Payments::start(self.bases.clone(), members)
    }

    /// Waits until a date is RUNNING after one settled, and the client has a few payments
    /// acknowledged: the moment for the fault.
    pub async fn wait_mid_walk(&mut self, payments: &Payments) {
        poll_until(
            "a date RUNNING after one settled, and payments acknowledged",
            CATCH_UP_WITHIN,
            async || {
                self.assert_replicas_running();
                let all = try_executions(&self.pool).await.ok()?;
                let settled = all.iter().any(|e| e.status == "SUCCESS");
                let running = all.iter().any(|e| e.status == "RUNNING");
                let acknowledged = payments.answers().iter().filter(|a| a.status == Some(201)).count();
                (settled && running && acknowledged >= 3).then_some(())
            },
        )
        .await;
    }

    /// Everything after `fault`: the walk catches up, writes succeed again, every replica is
    /// ready again by itself; the figures are printed, then checked: every date once, fines
    /// equal to the oracle's, every acknowledged payment exactly once, no answer but 201 and
    /// 503 `unavailable`.
    pub async fn finish(mut self, what: &str, fault: Fault, payments: Payments) {
        let after = self.recover(what, fault, payments).await;
        assert_settled_exactly_once(&after.pool, &self.loans, &days(self.start, after.settled_through)).await;
        assert_every_acknowledged_payment_once(&after.pool, &after.record).await;
        assert_only_unavailable(&after.record);
    }

    /// After a promotion that lost what the old primary had acknowledged (asynchronous
    /// replication): the walk settles the lost dates again, every date once with fines equal to
    /// the oracle's, nothing but 201 and 503 `unavailable` was answered; one `DATABASE_FAILOVER`
    /// alert says so, and every fencing token granted on the new timeline is above every token
    /// of the old one, `before` included. Acknowledged payments may be gone: counted, not checked.
    pub async fn finish_after_lost_writes(mut self, fault: Fault, payments: Payments, before: i64) {
        let after = self.recover("lost writes", fault, payments).await;
        assert_settled_exactly_once(&after.pool, &self.loans, &days(self.start, after.settled_through)).await;
        assert_only_unavailable(&after.record);
        let posted: Vec<i64> = sqlx::query_scalar("select id from ledger_entry where kind = 'PAYMENT'")
            .fetch_all(&after.pool)
            .await
            .unwrap();
        let lost = after
            .record
            .sent
            .iter()
            .filter(|s| s.acknowledged.is_some_and(|id| !posted.contains(&id)))
            .count();
        let alerts: Vec<String> =
            sqlx::query_scalar("select coalesce(detail, '') from alert where kind = 'DATABASE_FAILOVER'")
                .fetch_all(&after.pool)
                .await
                .unwrap();
        println!("ha lost writes: {lost} acknowledged payments lost; the alert: {alerts:?}");
        assert!(
            lost > 0,
            "the promotion was to lose acknowledged writes: the standbys had them all"
        );
        assert_eq!(
            alerts.len(),
            1,
            "one DATABASE_FAILOVER alert across the replicas: {alerts:?}"
        );
        let since: Vec<i64> = sqlx::query_scalar(
            "select fencing_token from task_execution where started_at > (select raised_at from alert \
             where kind = 'DATABASE_FAILOVER') union select fencing_token from task_lock",
        )
        .fetch_all(&after.pool)
        .await
        .unwrap();
        assert!(
            since.iter().all(|token| *token > before),
            "tokens granted after the promotion {since:?} must all be above {before}, the last of the old timeline"
        );
        // On timeline 2 every token is above 2^32, whatever the promoted counter went back to.
        assert!(since.iter().all(|token| *token > 1 << 32), "{since:?}");
    }

    /// The highest fencing token the primary has granted so far.
    pub async fn highest_token(&self) -> i64 {
        poll_until("the primary's lock row", AFTER_FAULT_WITHIN, async || {
            sqlx::query_scalar("select max(fencing_token) from task_lock")
                .fetch_one(&self.pool)
                .await
                .ok()
                .flatten()
        })
        .await
    }

    /// Waits until a date commits SUCCESS after `successes` had: a write the standbys may lack.
    pub async fn wait_another_success(&mut self, successes: usize) {
        poll_until("another date settled", CATCH_UP_WITHIN, async || {
            self.assert_replicas_running();
            let all = try_executions(&self.pool).await.ok()?;
            (all.iter().filter(|e| e.status == "SUCCESS").count() > successes).then_some(())
        })
        .await;
    }

    /// Dates settled so far.
    pub async fn successes(&self) -> usize {
        let all = try_executions(&self.pool).await.unwrap_or_default();
        all.iter().filter(|e| e.status == "SUCCESS").count()
    }

    /// The walk catches up after `fault`, writes succeed again, every replica is ready again by
    /// itself; prints the figures.
    async fn recover(&mut self, what: &str, fault: Fault, payments: Payments) -> Recovered {
        let leader = self.cluster.wait_new_leader(&fault.old_leader).await;
        let settled_through = self.wait_caught_up().await;
        let outage = poll_until("the probe to see the primary back", AFTER_FAULT_WITHIN, async || {
            self.watch.outage_after(fault.at)
        })
        .await;
        let first_write = poll_until(
            "a payment acknowledged after the primary was lost",
            AFTER_FAULT_WITHIN,
            async || {
                payments
                    .answers()
                    .iter()
                    .find(|a| a.status == Some(201) && a.sent >= outage.noticed)
                    .map(|a| a.received - outage.lost)
            },
        )
        .await;
        let record = payments.stop().await;
        self.wait_replicas_ready().await;

        // A fresh pool on the new primary for the end checks.
        let pool = finesettle::store::database::connect(&self.cluster.url(DATABASE), 2)
            .await
            .expect("connect to the new primary");
        let redone = dates_redone(&pool).await;
        let unavailable = record.answers.iter().filter(|a| a.status == Some(503)).count();
        println!(
            "ha {what}: {:.1} s without a primary; first acknowledged write {:.1} s after it was lost; \
             {unavailable} answers 503, {} 500, {} without an answer, of {} tries of {} payments; \
             {redone} dates redone; leader {} -> {leader}",
            outage.duration().as_secs_f64(),
            first_write.as_secs_f64(),
            record.answers.iter().filter(|a| a.status == Some(500)).count(),
            record.answers.iter().filter(|a| a.status.is_none()).count(),
            record.answers.len(),
            record.sent.len(),
            fault.old_leader,
        );
        Recovered {
            pool,
            record,
            settled_through,
        }
    }

    /// Waits until every date through yesterday is settled and nothing is RUNNING; answers the
    /// last date settled.
    async fn wait_caught_up(&mut self) -> NaiveDate {
        poll_until(
            "every date through yesterday settled, and nothing RUNNING",
            CATCH_UP_WITHIN,
            async || {
                self.assert_replicas_running();
                let all = try_executions(&self.pool).await.ok()?;
                caught_up_through(&all, self.yesterday)
            },
        )
        .await
    }

    /// Every replica answers `/readyz` 200 again, without having been restarted.
    async fn wait_replicas_ready(&mut self) {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(5))
            .build()
            .unwrap();
        for (replica, base) in self.replicas.iter_mut().zip(&self.bases) {
            let what = format!("{base}/readyz to answer 200");
            poll_until(&what, AFTER_FAULT_WITHIN, async || {
                replica.assert_running();
                let reply = http.get(format!("{base}/readyz")).send().await.ok()?;
                (reply.status().as_u16() == 200).then_some(())
            })
            .await;
        }
    }

    fn assert_replicas_running(&mut self) {
        for replica in &mut self.replicas {
            replica.assert_running();
        }
    }
}

/// What the end checks read, once the walk caught up after the fault.
struct Recovered {
    /// On the new primary.
    pool: PgPool,
    record: Record,
    settled_through: NaiveDate,
}

/// A pool for the test's reads during the failover: each connection is checked before use, so
/// one cut by the failover is replaced, and a read waits at most a few seconds for one.
fn reading_pool(url: &str) -> PgPool {
    PgPoolOptions::new()
        .max_connections(2)
        .acquire_timeout(Duration::from_secs(3))
        .test_before_acquire(true)
        .connect_lazy(url)
        .expect("a database URL")
}

/// Business dates with more than one execution: a date the fault interrupted, run again.
async fn dates_redone(pool: &PgPool) -> i64 {
    sqlx::query_scalar(
        "select count(*) from (select business_date from task_execution \
         where task_name = 'settle-fines' group by business_date having count(*) > 1) redone",
    )
    .fetch_one(pool)
    .await
    .unwrap()
}

/// Each payment acknowledged with a 201 is in the ledger exactly once, as the entry its 201
/// named; nothing else was posted (a payment never acknowledged would have to show up here).
async fn assert_every_acknowledged_payment_once(pool: &PgPool, record: &Record) {
    let given_up: Vec<&str> = record
        .sent
        .iter()
        .filter(|s| s.acknowledged.is_none())
        .map(|s| s.key.as_str())
        .collect();
    assert!(given_up.is_empty(), "payments never acknowledged: {given_up:?}");
    let mut entries: Vec<(i64, i64, i64)> =
        sqlx::query_as("select id, member_id, -amount_cents from ledger_entry where kind = 'PAYMENT' order by id")
            .fetch_all(pool)
            .await
            .unwrap();
    entries.sort_by_key(|(_, _, amount)| *amount);
    let mut expected: Vec<(i64, i64, i64)> = record
        .sent
        .iter()
        .map(|s| (s.acknowledged.unwrap(), s.member_id, s.amount_cents))
        .collect();
    expected.sort_by_key(|(_, _, amount)| *amount);
    assert_eq!(
        entries, expected,
        "PAYMENT entries (id, member, amount) against the payments acknowledged"
    );
}

/// Every answer but a 201 is a 503 `unavailable` problem with `Retry-After`: never a 500, never
/// silence.
fn assert_only_unavailable(record: &Record) {
    let wrong: Vec<String> = record
        .answers
        .iter()
        .filter(|a| a.status != Some(201))
        .filter(|a| {
            !(a.status == Some(503)
                && a.content_type == "application/problem+json"
                && a.code.as_deref() == Some("unavailable")
                && a.retry_after.is_some())
        })
        .map(|a| {
            format!(
                "{} {:?} after {:.1} s, {} retry-after {:?}: {}",
                a.key,
                a.status,
                (a.received - a.sent).as_secs_f64(),
                a.content_type,
                a.retry_after,
                a.detail
            )
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "{} of {} answers were not 201 nor 503 unavailable with Retry-After:\n{}",
        wrong.len(),
        record.answers.len(),
        wrong.join("\n")
    );
}

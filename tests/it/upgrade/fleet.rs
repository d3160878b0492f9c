//! Issue 20: a rolling upgrade from the previous release (`RELEASES`) to this one, then a rollback, as
//! an operator does it, on one real PostgreSQL database.
//!
//! Two replicas of the previous release walk slow dates on a fast cron while a client sends them
//! plain and keyed requests, each keyed one retried on the next replica (often of the other
//! release). A replica of this release starts and migrates; one of the previous release restarts
//! mid-roll and must come back; the previous ones are replaced one by one; then every replica is
//! rolled back to the previous release, with no restore. Every date must be settled exactly
//! once, fines must equal the oracle's recomputation, and neither release may answer a 5xx.
//!
//! The previous release is built by `scripts/previous-release` (cached under
//! `~/.cache/finesettle-upgrade`), or taken from `FINESETTLE_PREVIOUS_RELEASE`. The default
//! nextest profile leaves this test out; `--profile ci` and
//! `-E 'binary(it) & test(/^upgrade::/)'` run it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::{Days, NaiveDate};
use chrono_tz::Asia::Shanghai;
use serde_json::{Value, json};
use sqlx::PgPool;
use tokio::sync::RwLock;
use tokio_util::sync::CancellationToken;

use crate::common::ADMIN_TOKEN;
use crate::common::checks::{assert_settled_exactly_once, attempts, executions, poll_until};
use crate::common::data::days;
use crate::common::database::TestDatabase;
use crate::common::process::{Finesettle, Replica, Signal};
use crate::common::seed::{recent_loans, seed};

/// Every two seconds, in every process at the same instants.
const CRON: &str = "*/2 * * * * *";
/// Dates to walk: enough that some are left for each release after every step of the roll.
const CATCH_UP_DAYS: u64 = 40;
/// Each date sleeps this long inside its transaction, so fires overlap the roll's steps.
const SLOW_DATE: Duration = Duration::from_millis(400);
const WITHIN: Duration = Duration::from_secs(120);
/// What the guard logs when a release meets a newer release's expansion.
const SERVING_NEWER: &str = "this database has migrations of a newer release (an expansion); serving on";

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Release {
    Previous,
    This,
}

/// The previous release's binary: `FINESETTLE_PREVIOUS_RELEASE`, or built (once) by
/// `scripts/previous-release`.
fn previous_release() -> PathBuf {
    if let Some(path) = std::env::var_os("FINESETTLE_PREVIOUS_RELEASE") {
        return path.into();
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/previous-release");
    let output = std::process::Command::new(script)
        .stderr(std::process::Stdio::inherit())
        .output()
        .expect("run scripts/previous-release");
    assert!(output.status.success(), "scripts/previous-release failed");
    PathBuf::from(String::from_utf8(output.stdout).unwrap().trim())
}

/// A replica the client may call.
#[derive(Debug, Clone)]
struct Target {
    instance: String,
    release: Release,
    url: String,
}

/// The replicas running, and the ones the client calls.
struct Fleet {
    database_url: String,
    previous: PathBuf,
    start_date: NaiveDate,
    live: Arc<RwLock<Vec<Target>>>,
    running: BTreeMap<String, Replica>,
    started: usize,
}

impl Fleet {
    /// Starts `finesettle serve` of `release` as replica `slot`, waits until it serves, and
    /// gives it to the client. Answers its instance id.
    async fn start(&mut self, slot: &str, release: Release) -> String {
        self.started += 1;
        let instance = format!("{slot}-{release:?}-{}", self.started).to_lowercase();
        let command = match release {
            Release::Previous => Finesettle::of(&self.previous, &self.database_url, &instance),
            Release::This => Finesettle::new(&self.database_url, &instance),
        };
        let mut replica = command
            .env("FINESETTLE_SETTLE_CRON", CRON)
            .env("FINESETTLE_SETTLE_START_DATE", self.start_date.to_string())
            .env("FINESETTLE_BACKFILL_MAX_DAYS", "2")
            .env("FINESETTLE_LOCK_AT_LEAST_FOR", "1s")
            .env("FINESETTLE_SETTLE_BATCH_SIZE", "500")
            .spawn(&["serve"]);
        let url = replica.base_url().await;
        self.live.write().await.push(Target {
            instance: instance.clone(),
            release,
            url,
        });
        self.running.insert(instance.clone(), replica);
        instance
    }

    /// Takes `instance` away from the client, then stops it with SIGTERM: it must exit 0.
    async fn stop(&mut self, instance: &str) {
        // The client's round in flight ends first (it holds the read lock).
        self.live.write().await.retain(|t| t.instance != instance);
        let replica = self.running.remove(instance).expect("a running replica");
        replica.signal(Signal::Term);
        replica.wait(WITHIN).await.assert_success();
    }

    /// Replaces `instance` by a replica of `release` in the same slot.
    async fn replace(&mut self, instance: &str, release: Release) -> String {
        let slot = instance.split('-').next().unwrap().to_owned();
        self.stop(instance).await;
        self.start(&slot, release).await
    }

    async fn stop_all(&mut self) {
        let instances: Vec<String> = self.running.keys().cloned().collect();
        for instance in instances {
            self.stop(&instance).await;
        }
    }

    fn replica(&mut self, instance: &str) -> &mut Replica {
        self.running.get_mut(instance).expect("a running replica")
    }
}

/// One answer the client got.
#[derive(Debug, Clone)]
struct Answer {
    instance: String,
    release: Release,
    at: Instant,
    what: String,
    keyed: bool,
    /// 0: no answer (connection refused or reset).
    status: u16,
    /// Why the answer is wrong, if it is: a 5xx, no answer, a replay that differs.
    wrong: Option<String>,
}

/// A keyed loan as first answered, to replay later.
#[derive(Debug, Clone)]
struct Stored {
    release: Release,
    key: String,
    body: Value,
    response: Value,
}

#[derive(Default)]
struct Record {
    answers: Vec<Answer>,
    loans: Vec<Stored>,
}

/// The client: rounds of plain and keyed requests over the live replicas, until stopped.
struct Client {
    http: reqwest::Client,
    record: Arc<Mutex<Record>>,
    member_id: i64,
    due_on: NaiveDate,
}

impl Client {
    async fn send(&self, target: &Target, what: &str, request: reqwest::RequestBuilder, keyed: bool) -> Option<Value> {
        let result = request.bearer_auth(ADMIN_TOKEN).send().await;
        let (status, replayed, body) = match result {
            Ok(response) => {
                let status = response.status().as_u16();
                let replayed = response.headers().contains_key("idempotent-replayed");
                (status, replayed, response.json::<Value>().await.unwrap_or(Value::Null))
            }
            Err(error) => (0, false, json!(error.to_string())),
        };
        let wrong = (status == 0 || status >= 500).then(|| format!("{what}: {status} {body}"));
        self.record.lock().unwrap().answers.push(Answer {
            instance: target.instance.clone(),
            release: target.release,
            at: Instant::now(),
            what: what.to_owned(),
            keyed: keyed || replayed,
            status,
            wrong,
        });
        (200..300).contains(&status).then_some(body)
    }

    /// Records a wrong answer that was not a 5xx (a replay that differs from the first answer).
    fn wrong(&self, target: &Target, what: String) {
        self.record.lock().unwrap().answers.push(Answer {
            instance: target.instance.clone(),
            release: target.release,
            at: Instant::now(),
            what: what.clone(),
            keyed: true,
            status: 0,
            wrong: Some(what),
        });
    }

    /// A keyed `POST /api/v1/loans` sent to `first` and retried on `second`: both answer the
    /// same loan, the retry as a replay.
    async fn keyed_loan(&self, first: &Target, second: &Target, key: &str, body: Value) {
        let post = |target: &Target| {
            self.http
                .post(format!("{}/api/v1/loans", target.url))
                .header("Idempotency-Key", key)
                .json(&body)
        };
        let Some(created) = self.send(first, "keyed POST /loans", post(first), true).await else {
            return;
        };
        self.record.lock().unwrap().loans.push(Stored {
            release: first.release,
            key: key.to_owned(),
            body: body.clone(),
            response: created.clone(),
        });
        let replayed = self.send(second, "keyed POST /loans (retry)", post(second), true).await;
        if replayed.as_ref() != Some(&created) {
            self.wrong(
                second,
                format!("retry of {key} answered {replayed:?}, the first answer was {created}"),
            );
        }
    }

    async fn round(&self, n: usize, first: &Target, second: &Target) {
        let http = &self.http;
        let book = self
            .send(
                first,
                "POST /books",
                http.post(format!("{}/api/v1/books", first.url))
                    .json(&json!({ "title": format!("upgrade {n}") })),
                false,
            )
            .await;
        if let Some(book) = book {
            let body = json!({ "member_id": self.member_id, "book_id": book["id"], "due_on": self.due_on });
            self.keyed_loan(first, second, &format!("loan-{n}"), body).await;
        }
        let payment = |target: &Target| {
            http.post(format!("{}/api/v1/members/{}/payments", target.url, self.member_id))
                .header("Idempotency-Key", format!("payment-{n}"))
                .json(&json!({ "amount_cents": 100 }))
        };
        let paid = self.send(second, "keyed POST /payments", payment(second), true).await;
        let again = self
            .send(first, "keyed POST /payments (retry)", payment(first), true)
            .await;
        if paid.is_some() && again != paid {
            self.wrong(
                first,
                format!("retry of payment-{n} answered {again:?}, first {paid:?}"),
            );
        }
        for path in [
            format!("/api/v1/members/{}", self.member_id),
            format!("/api/v1/fines?member_id={}&limit=5", self.member_id),
            "/api/v1/jobs/settle-fines".to_owned(),
            "/healthz".to_owned(),
        ] {
            let what = format!("GET {}", path.split('?').next().unwrap());
            self.send(first, &what, http.get(format!("{}{path}", first.url)), false)
                .await;
        }
    }

    /// Rounds over the live replicas, each keyed request retried on the next one.
    async fn run(self, live: Arc<RwLock<Vec<Target>>>, stop: CancellationToken) {
        let mut n = 0;
        while !stop.is_cancelled() {
            let targets = live.read().await;
            if targets.is_empty() {
                drop(targets);
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
            let first = targets[n % targets.len()].clone();
            let second = targets[(n + 1) % targets.len()].clone();
            self.round(n, &first, &second).await;
            drop(targets);
            n += 1;
        }
    }
}

/// What the test reads back from the client's record.
struct Tally(Arc<Mutex<Record>>);

impl Tally {
    /// Keyed answers `instance` gave after `since`.
    fn keyed_by(&self, instance: &str, since: Instant) -> usize {
        let record = self.0.lock().unwrap();
        record
            .answers
            .iter()
            .filter(|a| a.instance == instance && a.keyed && a.at > since && a.wrong.is_none())
            .count()
    }

    /// Panics at the first wrong answer of either release, naming them all: a wait for answers
    /// that never come right would only say that it timed out.
    fn assert_none_wrong(&self) {
        let record = self.0.lock().unwrap();
        let wrong: Vec<String> = record
            .answers
            .iter()
            .filter_map(|a| {
                let wrong = a.wrong.as_ref()?;
                Some(format!("{} ({:?}): {wrong} [{}]", a.instance, a.release, a.what))
            })
            .collect();
        assert!(
            wrong.is_empty(),
            "{} wrong answers of {}:\n{}",
            wrong.len(),
            record.answers.len(),
            wrong.join("\n")
        );
    }

    async fn wait_keyed(&self, instances: &[&str], since: Instant, at_least: usize) {
        let what = format!("{at_least} keyed answers from each of {instances:?}");
        poll_until(&what, WITHIN, async || {
            self.assert_none_wrong();
            instances
                .iter()
                .all(|i| self.keyed_by(i, since) >= at_least)
                .then_some(())
        })
        .await;
    }
}

async fn business_today(pool: &PgPool) -> NaiveDate {
    finesettle::store::clock::business_today(pool, Shanghai).await.unwrap()
}

/// The newest execution id so far (0 when none): later executions have larger ids.
async fn last_execution(pool: &PgPool) -> i64 {
    executions(pool).await.last().map_or(0, |e| e.id)
}

/// Dates settled by replicas whose instance id contains `release` (`previous`, `this`), among
/// executions after `after`.
async fn settled_by(pool: &PgPool, release: Release, after: i64) -> usize {
    let tag = format!("-{release:?}-").to_lowercase();
    executions(pool)
        .await
        .iter()
        .filter(|e| e.id > after && e.status == "SUCCESS" && e.instance_id.contains(&tag))
        .count()
}

async fn wait_settled_by(pool: &PgPool, release: Release, after: i64, at_least: usize) {
    let what = format!("{at_least} dates settled by the {release:?} release");
    poll_until(&what, WITHIN, async || {
        (settled_by(pool, release, after).await >= at_least).then_some(())
    })
    .await;
}

#[tokio::test]
async fn a_rolling_upgrade_and_a_rollback_keep_every_date_once_and_answer_no_5xx() {
    let begun = Instant::now();
    let previous = previous_release();
    finesettle::telemetry::init();
    let database = TestDatabase::create().await;
    // The previous release creates the schema, as it did in production.
    Finesettle::of(&previous, database.url(), "operator")
        .run(&["migrate"], WITHIN)
        .await
        .assert_success();
    let pool = finesettle::store::database::connect(database.url(), 4).await.unwrap();
    let today = business_today(&pool).await;
    let loans = seed(&pool, &recent_loans(201, today)).await;
    let member_id: i64 = sqlx::query_scalar(
        "insert into member (name, email) values ('Upgrade Client', 'upgrade@example.org') returning id",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    crate::common::slow::slow_dates(&pool, SLOW_DATE).await;

    let start_date = today - Days::new(CATCH_UP_DAYS);
    let live = Arc::new(RwLock::new(Vec::new()));
    let mut fleet = Fleet {
        database_url: database.url().to_owned(),
        previous,
        start_date,
        live: Arc::clone(&live),
        running: BTreeMap::new(),
        started: 0,
    };
    let record = Arc::new(Mutex::new(Record::default()));
    let tally = Tally(Arc::clone(&record));
    let stop_client = CancellationToken::new();
    let client = tokio::spawn(
        Client {
            http: reqwest::Client::new(),
            record: Arc::clone(&record),
            member_id,
            due_on: today + Days::new(14),
        }
        .run(Arc::clone(&live), stop_client.clone()),
    );
    let mut phases: Vec<(&str, Duration)> = Vec::new();
    let mut phase_start = Instant::now();
    let mut phase = |name: &'static str, phase_start: &mut Instant| {
        phases.push((name, phase_start.elapsed()));
        *phase_start = Instant::now();
    };

    // 1. The previous release walks the dates.
    let a = fleet.start("a", Release::Previous).await;
    let b = fleet.start("b", Release::Previous).await;
    wait_settled_by(&pool, Release::Previous, 0, 3).await;
    phase("previous release only", &mut phase_start);

    // 2. A replica of this release starts, and migrates, mid-walk.
    let c = fleet.start("c", Release::This).await;
    let migrated = Instant::now();
    let after_migration = last_execution(&pool).await;
    let oldest: String = sqlx::query_scalar("select oldest_release from schema_compat")
        .fetch_one(&pool)
        .await
        .expect("this release's expansion is applied");
    // Both releases settle dates under the one lock, and the previous one answers keyed requests
    // on the migrated schema.
    tally.wait_keyed(&[&a, &b], migrated, 20).await;
    wait_settled_by(&pool, Release::Previous, after_migration, 2).await;
    wait_settled_by(&pool, Release::This, after_migration, 1).await;
    phase("mixed: this release migrated", &mut phase_start);

    // 3. A replica of the previous release restarts mid-roll, and comes back.
    let b = fleet.replace(&b, Release::Previous).await;
    fleet.replica(&b).log_line(SERVING_NEWER, Duration::from_secs(10)).await;
    tally.wait_keyed(&[&b], Instant::now(), 4).await;
    phase("previous release restarted mid-roll", &mut phase_start);

    // 4. The roll: the previous replicas are replaced one by one.
    let a = fleet.replace(&a, Release::This).await;
    let b = fleet.replace(&b, Release::This).await;
    let rolled = last_execution(&pool).await;
    tally.wait_keyed(&[&a, &b, &c], Instant::now(), 2).await;
    wait_settled_by(&pool, Release::This, rolled, 4).await;
    phase("this release only", &mut phase_start);

    // 5. The rollback, with no restore: every replica back to the previous release.
    let rolled_back = last_execution(&pool).await;
    let left_at_rollback =
        days(start_date, today.pred_opt().unwrap()).len() - crate::common::checks::successes_by_date(&pool).await.len();
    let mut previous_again = Vec::new();
    for instance in [a, b, c] {
        previous_again.push(fleet.replace(&instance, Release::Previous).await);
    }
    let again: Vec<&str> = previous_again.iter().map(String::as_str).collect();
    tally.wait_keyed(&again, Instant::now(), 4).await;
    // Keys stored by this release are replayed by the previous one.
    let stored_here: Vec<Stored> = record
        .lock()
        .unwrap()
        .loans
        .iter()
        .filter(|s| s.release == Release::This)
        .take(5)
        .cloned()
        .collect();
    assert!(!stored_here.is_empty(), "this release stored no keyed loan");
    let target = live.read().await[0].clone();
    let http = reqwest::Client::new();
    for stored in &stored_here {
        let replay = http
            .post(format!("{}/api/v1/loans", target.url))
            .bearer_auth(ADMIN_TOKEN)
            .header("Idempotency-Key", &stored.key)
            .json(&stored.body)
            .send()
            .await
            .unwrap();
        assert_eq!(replay.status(), 201, "{}", stored.key);
        assert!(replay.headers().contains_key("idempotent-replayed"));
        assert_eq!(replay.json::<Value>().await.unwrap(), stored.response);
    }
    // The previous release settles what is left, and its fires win the lock again.
    let yesterday = today.pred_opt().unwrap();
    poll_until("every date through yesterday to be settled", WITHIN, async || {
        let settled = crate::common::checks::successes_by_date(&pool).await;
        settled.contains_key(&yesterday).then_some(())
    })
    .await;
    poll_until("a fire of the rolled-back release to win", WITHIN, async || {
        attempts(&pool)
            .await
            .iter()
            .any(|a| again.contains(&a.instance_id.as_str()) && a.outcome == "WON")
            .then_some(())
    })
    .await;
    phase("rolled back to the previous release", &mut phase_start);

    stop_client.cancel();
    client.await.unwrap();
    fleet.stop_all().await;

    // Every date once, fines as the oracle has them, nothing failed.
    let settled_through = finesettle::settlement::records::last_success(&pool, &"settle-fines".into())
        .await
        .unwrap()
        .unwrap();
    let dates = days(start_date, settled_through);
    let all = executions(&pool).await;
    assert!(all.iter().all(|e| e.status == "SUCCESS"), "{all:#?}");
    crate::common::slow::fast_dates(&pool).await;
    assert_settled_exactly_once(&pool, &loans, &dates).await;
    let timeline = attempts(&pool).await;
    let allowed = ["WON", "HELD", "BUSY", "NOTHING_TO_DO"];
    assert!(
        timeline.iter().all(|a| allowed.contains(&a.outcome.as_str())),
        "{timeline:#?}"
    );

    // The figures, and no wrong answer from either release.
    let mut by_release: BTreeMap<Release, (usize, usize, usize)> = BTreeMap::new();
    for answer in &record.lock().unwrap().answers {
        let entry = by_release.entry(answer.release).or_default();
        entry.0 += 1;
        entry.1 += usize::from(answer.keyed);
        entry.2 += usize::from(answer.status >= 500);
    }
    println!(
        "upgrade test: {} dates from {start_date} to {settled_through}",
        dates.len()
    );
    println!("  schema_compat.oldest_release after this release migrated: {oldest}");
    println!(
        "  dates settled while both releases ran: {} by the previous release, {} by this one",
        settled_by(&pool, Release::Previous, after_migration).await
            - settled_by(&pool, Release::Previous, rolled).await,
        settled_by(&pool, Release::This, after_migration).await - settled_by(&pool, Release::This, rolled).await
    );
    println!(
        "  dates settled by this release alone: {}",
        settled_by(&pool, Release::This, rolled).await - settled_by(&pool, Release::This, rolled_back).await
    );
    println!(
        "  dates left at the rollback: {left_at_rollback}, settled by the previous release after it: {}",
        settled_by(&pool, Release::Previous, rolled_back).await
    );
    for (release, (requests, keyed, server_errors)) in &by_release {
        println!("  {release:?} release: {requests} requests, {keyed} keyed, {server_errors} answered 5xx");
    }
    for (name, took) in &phases {
        println!("  {name}: {:.1} s", took.as_secs_f64());
    }
    println!("  total: {:.1} s", begun.elapsed().as_secs_f64());
    tally.assert_none_wrong();
    assert!(by_release.len() == 2, "both releases answered: {:?}", by_release.keys());
}

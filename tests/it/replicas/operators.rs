//! Issue 19: operators racing the scheduler. Ten operators send runs and backfills to three
//! replicas whose cron fires every three seconds while weeks are caught up a few dates per fire.
//! Every answer is a 202 or a 409 whose code says what the operator met (another replica's lock,
//! this replica's fire taking the lock or walking, dates already settled), never a 5xx; every
//! date a 202 promised ends with exactly one SUCCESS, and fines equal the oracle's.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use chrono::{Days, NaiveDate};
use finesettle::config::Settings;
use serde_json::json;
use tokio::sync::Mutex;

use crate::common::checks::{assert_settled_exactly_once, poll_until, successes_by_date};
use crate::common::data::days;
use crate::common::seed::{migrated_db, recent_loans, seed};
use crate::common::{TestApp, spawn_on_database};

const JOB: &str = "/api/v1/jobs/settle-fines";
const OPERATORS: usize = 10;
const CATCH_UP_DAYS: u64 = 20;
/// The 409 codes an operator may meet while the job runs.
const CONFLICTS: [&str; 4] = ["lock_held", "job_starting", "job_running", "already_settled"];

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn operators_racing_the_scheduler_get_a_202_or_a_409_that_says_why_and_every_promised_date_is_settled() {
    let (database, pool) = migrated_db().await;
    let today = finesettle::store::clock::business_today(&pool, chrono_tz::Asia::Shanghai)
        .await
        .unwrap();
    let start = today - Days::new(CATCH_UP_DAYS);
    let yesterday = today - Days::new(1);
    let loans = seed(&pool, &recent_loans(29, today)).await;
    let settings = |id: &'static str| {
        move |s: &mut Settings| {
            s.instance_id = id.to_owned();
            s.scheduler_enabled = true;
            s.job.settle_cron = "*/3 * * * * *".to_owned();
            s.job.settle_start_date = Some(start);
            s.job.backfill_max_days = 4;
            s.job.lock_at_most_for = Duration::from_secs(5);
            s.job.lock_at_least_for = Duration::ZERO;
            s.job.batch_size = 200;
        }
    };
    let replicas = Arc::new(vec![
        spawn_on_database(database.share(), settings("replica-a")).await,
        spawn_on_database(database.share(), settings("replica-b")).await,
        spawn_on_database(database.share(), settings("replica-c")).await,
    ]);

    // Each operator asks a replica in turn for a date (or four) of the range, again and again.
    let promised = Arc::new(Mutex::new(BTreeSet::new()));
    let answers = Arc::new(Mutex::new(Vec::new()));
    let operators: Vec<_> = (0..OPERATORS)
        .map(|operator| {
            let (replicas, promised, answers) = (replicas.clone(), promised.clone(), answers.clone());
            tokio::spawn(async move {
                for round in 0..12u64 {
                    let app: &TestApp = &replicas[(operator + round as usize) % replicas.len()];
                    let offset = (operator as u64 * 7 + round * 3) % CATCH_UP_DAYS;
                    let from = start + Days::new(offset);
                    let to = (from + Days::new(3)).min(yesterday);
                    let (reply, dates) = if round % 2 == 0 {
                        let reply = app.post(&format!("{JOB}/runs"), json!({ "business_date": to })).await;
                        (reply, vec![to])
                    } else {
                        let reply = app
                            .post(&format!("{JOB}/backfill"), json!({ "from": from, "to": to }))
                            .await;
                        (reply, days(from, to))
                    };
                    let code = reply.body["code"].as_str().unwrap_or_default().to_owned();
                    if reply.status.as_u16() == 202 {
                        promised.lock().await.extend(dates);
                    }
                    answers
                        .lock()
                        .await
                        .push((reply.status.as_u16(), code, reply.body.to_string()));
                    tokio::time::sleep(Duration::from_millis(150)).await;
                }
            })
        })
        .collect();
    for operator in operators {
        operator.await.unwrap();
    }

    // Every answer is a 202 or one of the 409s that say what was met.
    let answers = answers.lock().await.clone();
    for (status, code, body) in &answers {
        assert!(
            *status == 202 || (*status == 409 && CONFLICTS.contains(&code.as_str())),
            "an operator got {status}: {body}"
        );
    }
    let count = |code: &str| answers.iter().filter(|(_, c, _)| c == code).count();
    eprintln!(
        "{} answers: {} accepted, {} lock_held, {} job_starting, {} job_running, {} already_settled",
        answers.len(),
        answers.iter().filter(|(s, ..)| *s == 202).count(),
        count("lock_held"),
        count("job_starting"),
        count("job_running"),
        count("already_settled")
    );

    // The scheduler catches up the rest; every promised date among them, exactly once.
    poll_until(
        "every date through yesterday settled",
        Duration::from_secs(120),
        async || (successes_by_date(&pool).await.len() == days(start, yesterday).len()).then_some(()),
    )
    .await;
    let settled: BTreeSet<NaiveDate> = successes_by_date(&pool).await.into_keys().collect();
    let promised = promised.lock().await.clone();
    assert!(
        promised.is_subset(&settled),
        "promised {promised:?}, settled {settled:?}"
    );
    for replica in Arc::into_inner(replicas).expect("the operators are done") {
        replica.stop().await;
    }
    assert_settled_exactly_once(&pool, &loans, &days(start, yesterday)).await;
}

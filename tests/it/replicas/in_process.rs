//! Replicas as applications in this process, on one database, firing the job themselves
//! (their schedulers are off) at the same instant.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, NaiveDate, TimeZone, Utc};
use finesettle::config::Settings;
use finesettle::domain::FencingToken;
use finesettle::jobs::{Refused, Request, RunReport, SettleJob};
use finesettle::settlement::Trigger;
use tokio::sync::Barrier;

use crate::common::checks::{assert_settled_exactly_once, attempts, attempts_as, executions};
use crate::common::data::{days, ymd};
use crate::common::seed::{fixed_loans, seed};
use crate::common::{TestApp, spawn_app_with, spawn_replica};

const REPLICAS: [&str; 3] = ["replica-a", "replica-b", "replica-c"];

/// Starts one replica per id of `REPLICAS[..n]` on one fresh database, each with `customize`
/// applied to its settings.
async fn replicas(n: usize, customize: impl Fn(&mut Settings)) -> Vec<TestApp> {
    let settings = |id: &'static str| {
        let customize = &customize;
        move |s: &mut Settings| {
            customize(s);
            s.instance_id = id.to_owned();
        }
    };
    let first = spawn_app_with(settings(REPLICAS[0])).await;
    let mut all = Vec::new();
    for id in &REPLICAS[1..n] {
        all.push(spawn_replica(&first, settings(id)).await);
    }
    all.insert(0, first);
    all
}

/// The cron slot that settles `target`: 02:00 in Shanghai the next day, 18:00 UTC on `target`.
fn slot_for(target: NaiveDate) -> DateTime<Utc> {
    Utc.from_utc_datetime(&target.and_hms_opt(18, 0, 0).unwrap())
}

/// How one replica's fire ended.
#[derive(Debug)]
enum Fired {
    Won(RunReport),
    Held { holder: String },
    NothingToDo,
}

/// Every job fires `request` for `slot` at the same instant, each on its own task; answers in the
/// order of `jobs`.
async fn fire_together(jobs: &[SettleJob], slot: DateTime<Utc>, request: Request) -> Vec<Fired> {
    let barrier = Arc::new(Barrier::new(jobs.len()));
    let fires: Vec<_> = jobs
        .iter()
        .enumerate()
        .map(|(i, job)| {
            let (job, barrier, request) = (job.clone(), Arc::clone(&barrier), request.clone());
            tokio::spawn(async move {
                barrier.wait().await;
                match job.fire(Trigger::Cron, slot, request).await {
                    Ok(report) => Fired::Won(report),
                    Err(Refused::Held { holder, .. }) => Fired::Held { holder },
                    Err(Refused::NothingToDo) => Fired::NothingToDo,
                    Err(other) => panic!("{}: unexpected refusal: {other}", REPLICAS[i]),
                }
            })
        })
        .collect();
    let mut outcomes = Vec::new();
    for fire in fires {
        outcomes.push(fire.await.expect("the fire task"));
    }
    outcomes
}

/// Issue test 1: three replicas fire the same slot at the same instant, round after round, each
/// round a later target. Exactly one replica settles each round's dates; the others find the
/// lock held, or (when they get to it after the winner released it) nothing left to do.
#[tokio::test(flavor = "multi_thread", worker_threads = 3)]
async fn three_replicas_firing_together_settle_each_date_once() {
    let start = ymd(2026, 1, 1);
    // No lock_at_least_for: a fast round releases the lock at once, so that a replica reaching
    // the lock after the winner finished takes it, and must then find nothing left to do. That
    // is the race lock_at_least_for would hide; the execution records have to win it alone.
    let replicas = replicas(3, |s| {
        s.job.lock_at_least_for = Duration::ZERO;
        s.job.settle_start_date = Some(start);
        s.job.batch_size = 100;
    })
    .await;
    let pool = replicas[0].pool.clone();
    let loans = seed(&pool, &fixed_loans(21)).await;
    let jobs: Vec<SettleJob> = replicas.iter().map(|r| r.job.clone()).collect();

    // Rounds of one day, several days, across month ends, and a whole month at once.
    let targets = [0, 1, 6, 27, 30, 31, 45, 58, 59, 60, 88, 89, 90, 105, 119].map(|n| start + chrono::Days::new(n));
    let mut settled_through: Option<NaiveDate> = None;
    let mut last_token = FencingToken(0);
    for target in targets {
        let slot = slot_for(target);
        let outcomes = fire_together(&jobs, slot, Request::CatchUp { target }).await;
        let round_dates = days(settled_through.map_or(start, |d| d.succ_opt().unwrap()), target);

        let winners: Vec<(usize, &RunReport)> = outcomes
            .iter()
            .enumerate()
            .filter_map(|(i, o)| match o {
                Fired::Won(report) => Some((i, report)),
                _ => None,
            })
            .collect();
        assert_eq!(
            winners.len(),
            1,
            "round {target}: exactly one replica runs: {outcomes:?}"
        );
        let (winner, report) = winners[0];
        assert!(
            report.walk.completed() && !report.lost_lease,
            "round {target}: {report:?}"
        );
        assert_eq!(report.walk.succeeded(), round_dates.len(), "round {target}: {report:?}");
        assert!(report.fencing_token > last_token, "fencing tokens grow");
        last_token = report.fencing_token;
        for (i, outcome) in outcomes.iter().enumerate() {
            match outcome {
                Fired::Won(_) => {}
                Fired::Held { holder } => {
                    assert!(
                        REPLICAS.contains(&holder.as_str()) && holder != REPLICAS[i],
                        "round {target}: {} saw the lock held by {holder}",
                        REPLICAS[i]
                    );
                }
                Fired::NothingToDo => {}
            }
        }

        // The timeline of this slot: one attempt per replica, one WON, by the winner.
        let timeline: Vec<_> = attempts(&pool)
            .await
            .into_iter()
            .filter(|a| a.fired_at == slot)
            .collect();
        let mut who: Vec<&str> = timeline.iter().map(|a| a.instance_id.as_str()).collect();
        who.sort_unstable();
        assert_eq!(who, REPLICAS, "round {target}: {timeline:?}");
        let won: Vec<_> = timeline.iter().filter(|a| a.outcome == "WON").collect();
        assert_eq!(won.len(), 1, "round {target}: {timeline:?}");
        assert_eq!(won[0].instance_id, REPLICAS[winner]);
        assert_eq!(won[0].fencing_token, Some(report.fencing_token.0));
        assert!(
            timeline
                .iter()
                .all(|a| ["WON", "HELD", "NOTHING_TO_DO"].contains(&a.outcome.as_str())),
            "round {target}: {timeline:?}"
        );

        // Each of the round's dates executed once, by the winner, with its token.
        let round: Vec<_> = executions(&pool)
            .await
            .into_iter()
            .filter(|e| round_dates.contains(&e.business_date))
            .collect();
        assert_eq!(
            round.len(),
            round_dates.len(),
            "round {target}: one execution per date: {round:?}"
        );
        for e in &round {
            assert_eq!(
                (e.status.as_str(), e.instance_id.as_str(), e.fencing_token),
                ("SUCCESS", REPLICAS[winner], report.fencing_token.0),
                "round {target}: {e:?}"
            );
        }
        settled_through = Some(target);
    }

    let all = days(start, *targets.last().unwrap());
    assert_eq!(executions(&pool).await.len(), all.len(), "no date ran twice");
    assert_settled_exactly_once(&pool, &loans, &all).await;
}

/// Issue test 5: a run that ends at once keeps the lock for lock_at_least_for, so a replica whose
/// trigger comes a moment later finds it held and runs nothing.
#[tokio::test]
async fn a_quick_run_is_not_repeated_by_a_replica_firing_a_moment_later() {
    const AT_LEAST_FOR: Duration = Duration::from_secs(20);
    let target = ymd(2026, 3, 16);
    let apps = replicas(2, |s| {
        s.job.lock_at_least_for = AT_LEAST_FOR;
        s.job.settle_start_date = Some(target);
    })
    .await;
    let (a, b) = (&apps[0], &apps[1]);
    let loans = seed(&a.pool, &crate::common::data::random_loans(22, 200)).await;
    let slot = slot_for(target);

    // Replica a fires on time: one date, a few hundred loans, done at once.
    let report = a
        .job
        .fire(Trigger::Cron, slot, Request::CatchUp { target })
        .await
        .expect("the first replica runs");
    assert!(report.walk.completed() && report.walk.succeeded() == 1, "{report:?}");

    // The lock stays taken until lock_at_least_for after it was acquired, by the database clock.
    let (locked_at, locked_until): (DateTime<Utc>, DateTime<Utc>) =
        sqlx::query_as("select locked_at, locked_until from task_lock where task_name = 'settle-fines'")
            .fetch_one(&a.pool)
            .await
            .unwrap();
    assert_eq!(
        locked_until - locked_at,
        chrono::Duration::from_std(AT_LEAST_FOR).unwrap()
    );

    // Replica b's trigger for the same slot comes a moment later: the lock is still held by a.
    match b.job.fire(Trigger::Cron, slot, Request::CatchUp { target }).await {
        Err(Refused::Held {
            holder,
            locked_until: until,
        }) => {
            assert_eq!((holder.as_str(), until), ("replica-a", locked_until));
        }
        other => panic!("expected the lock to be held by replica-a, got {other:?}"),
    }
    // A manual run of the same date by b is told the date is settled, without touching the lock.
    match b.job.fire(Trigger::Manual, slot, Request::date(target)).await {
        Err(Refused::NothingToDo) => {}
        other => panic!("expected the date to be already settled, got {other:?}"),
    }

    let timeline: Vec<(String, String, Option<String>)> =
        attempts_as(&a.pool, |t| (t.instance_id, t.outcome, t.holder)).await;
    let held = |replica: &str| (replica.to_owned(), "HELD".to_owned(), Some("replica-a".to_owned()));
    assert_eq!(
        timeline,
        [
            ("replica-a".to_owned(), "WON".to_owned(), None),
            held("replica-b"),
            ("replica-b".to_owned(), "NOTHING_TO_DO".to_owned(), None)
        ]
    );
    assert_eq!(executions(&a.pool).await.len(), 1, "exactly one execution of the date");
    assert_settled_exactly_once(&a.pool, &loans, &[target]).await;
}

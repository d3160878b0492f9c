//! Issue 10 case 4: a scheduled fire that meets a held lock (an operator's run holding it past
//! the fire instant with lock_at_least_for, a long backfill) tries again when the lease it met
//! ends, instead of losing the night; the attempt timeline shows both tries.

use std::time::Duration;

use chrono::{DateTime, Days, NaiveDate, Utc};
use chrono_tz::Asia::Shanghai;
use finesettle::jobs::scheduler::fire_until_run;
use finesettle::jobs::{Refused, Request};
use finesettle::lock::{Acquired, JobLock, Lease, LockSpec};
use finesettle::schedule::settle_target;
use finesettle::settlement::Trigger;
use sqlx::PgPool;

use crate::common::checks::{
    Attempt, assert_no_charge_twice, attempts, attempts_as, executions, poll_until, successes_by_date,
};
use crate::common::data::{days, load_loans, ymd};
use crate::common::oracle::Model;
use crate::common::seed::{fixed_loans, recent_loans, seed};
use crate::common::settlement::{assert_matches, fines, ledger};
use crate::common::{TestApp, spawn_app_with};
use crate::replicas::cron::{once_at, slot_for, whole_second_in};

const OPERATOR: &str = "operator-console";

/// The lock taken by an operator's run elsewhere that ended at once: released, but kept until
/// `held_for` after it was taken (its lock_at_least_for). Answers when it ends, by the database
/// clock.
async fn held_by_an_operator(pool: &PgPool, held_for: Duration) -> DateTime<Utc> {
    let lock = JobLock::postgres(pool.clone());
    let spec = LockSpec {
        task_name: "settle-fines".into(),
        instance_id: OPERATOR.to_owned(),
        at_most_for: held_for + Duration::from_secs(60),
        at_least_for: held_for,
    };
    let lease: Lease = match lock.try_acquire(&spec).await.unwrap() {
        Acquired::Won(lease) => lease,
        held => panic!("the lock of a fresh database is free: {held:?}"),
    };
    assert!(lock.release(&lease, held_for).await.unwrap());
    sqlx::query_scalar("select locked_until from task_lock where task_name = 'settle-fines'")
        .fetch_one(pool)
        .await
        .unwrap()
}

/// An attempt as these tests compare it: (trigger, instance, outcome, holder, fired_at).
type Seen = (String, String, String, Option<String>, DateTime<Utc>);

async fn timeline(pool: &PgPool) -> Vec<Seen> {
    attempts(pool)
        .await
        .into_iter()
        .map(|a: Attempt| (a.trigger, a.instance_id, a.outcome, a.holder, a.fired_at))
        .collect()
}

/// HELD by the operator, then WON, both by replica-a for the same fire.
fn held_then_won(trigger: &str, fired_at: DateTime<Utc>) -> Vec<Seen> {
    let seen = |outcome: &str, holder: Option<&str>| -> Seen {
        (
            trigger.into(),
            "replica-a".into(),
            outcome.into(),
            holder.map(Into::into),
            fired_at,
        )
    };
    vec![seen("HELD", Some(OPERATOR)), seen("WON", None)]
}

/// When the first date of the run started, by the database clock.
async fn first_started_at(pool: &PgPool) -> DateTime<Utc> {
    sqlx::query_scalar("select min(started_at) from task_execution")
        .fetch_one(pool)
        .await
        .unwrap()
}

/// One SUCCESS for each of `dates` and no other, no CHARGE twice, fines and ledger as the oracle
/// has them (recent dates may owe no CHARGE yet).
async fn assert_settled(pool: &PgPool, dates: &[NaiveDate]) {
    let expected = dates.iter().map(|d| (*d, 1)).collect();
    assert_eq!(successes_by_date(pool).await, expected);
    assert_no_charge_twice(pool).await;
    let model = Model::after(dates[0], &load_loans(pool).await, dates);
    assert_matches(&model, &fines(pool).await, &ledger(pool).await);
}

async fn replica(start: NaiveDate, customize: impl FnOnce(&mut finesettle::config::Settings)) -> TestApp {
    spawn_app_with(|s| {
        s.instance_id = "replica-a".to_owned();
        s.job.settle_start_date = Some(start);
        s.job.lock_at_least_for = Duration::ZERO;
        s.job.batch_size = 200;
        customize(s);
    })
    .await
}

/// [`fire_until_run`] of a cron fire for `slot` settling through `to`, which gives up at
/// `next_slot`; `Err` when it took longer than `within`.
async fn cron_fire_within(
    app: &TestApp,
    slot: DateTime<Utc>,
    to: NaiveDate,
    next_slot: DateTime<Utc>,
    within: Duration,
) -> Result<Result<finesettle::jobs::RunReport, Refused>, tokio::time::error::Elapsed> {
    let request = Request::CatchUp { target: to };
    tokio::time::timeout(
        within,
        fire_until_run(&app.job, Trigger::Cron, slot, request, Some(next_slot)),
    )
    .await
}

#[tokio::test]
async fn a_held_fire_tries_again_when_the_lease_it_met_ends() {
    let (from, to) = (ymd(2026, 3, 27), ymd(2026, 3, 31));
    let app = replica(from, |_| {}).await;
    let loans = seed(&app.pool, &fixed_loans(111)).await;
    let lease_end = held_by_an_operator(&app.pool, Duration::from_secs(3)).await;
    let slot = slot_for(to);
    let next_slot = finesettle::store::clock::now(&app.pool).await.unwrap() + chrono::Duration::minutes(5);

    let report = fire_until_run(
        &app.job,
        Trigger::Cron,
        slot,
        Request::CatchUp { target: to },
        Some(next_slot),
    )
    .await
    .expect("the fire runs once the operator's lease ended");
    assert!(report.walk.completed() && !report.lost_lease, "{report:?}");
    assert_eq!(report.walk.succeeded(), days(from, to).len());

    assert_eq!(timeline(&app.pool).await, held_then_won("cron", slot));
    assert!(
        first_started_at(&app.pool).await >= lease_end,
        "the second try came once the lease ended"
    );
    crate::common::checks::assert_settled_exactly_once(&app.pool, &loans, &days(from, to)).await;
}

#[tokio::test]
async fn a_held_fire_leaves_it_to_the_next_slot_when_the_lease_outlasts_it() {
    let (from, to) = (ymd(2026, 3, 27), ymd(2026, 3, 31));
    let app = replica(from, |_| {}).await;
    seed(&app.pool, &fixed_loans(112)).await;
    held_by_an_operator(&app.pool, Duration::from_secs(600)).await;
    let slot = slot_for(to);
    let next_slot = finesettle::store::clock::now(&app.pool).await.unwrap() + chrono::Duration::seconds(2);

    let fired = cron_fire_within(&app, slot, to, next_slot, Duration::from_secs(30))
        .await
        .expect("the fire does not wait past the next slot");
    assert!(
        matches!(fired, Err(Refused::Held { ref holder, .. }) if holder == OPERATOR),
        "{fired:?}"
    );
    let seen: Vec<String> = attempts_as(&app.pool, |a| a.outcome).await;
    assert_eq!(seen, ["HELD"]);
    assert!(executions(&app.pool).await.is_empty());
}

/// Contract §2.2: a fire that arrives while this process still runs the previous one is
/// recorded BUSY and dropped, not queued. The other replicas' fires of the slot met this
/// process's lock and try again when its lease ends; a retry here would win the lock again the
/// moment its own run released it, so a slow replica would keep the job to itself.
#[tokio::test]
async fn a_fire_that_finds_this_process_busy_is_recorded_busy_and_dropped() {
    let (from, to) = (ymd(2026, 3, 27), ymd(2026, 3, 31));
    let app = replica(from, |_| {}).await;
    seed(&app.pool, &fixed_loans(115)).await;
    crate::common::slow::slow_dates(&app.pool, Duration::from_secs(2)).await;
    let now = finesettle::store::clock::now(&app.pool).await.unwrap();
    let running = app
        .job
        .start(Trigger::Manual, now, Request::date(from))
        .await
        .expect("the operator's run starts");

    let next_slot = now + chrono::Duration::minutes(5);
    let fired = cron_fire_within(&app, slot_for(to), to, next_slot, Duration::from_secs(1))
        .await
        .expect("a busy fire does not wait for the running one");
    assert!(matches!(fired, Err(Refused::Busy(_))), "{fired:?}");

    let report = running.wait().await;
    assert_eq!(report.walk.succeeded(), 1, "{report:?}");
    let seen: Vec<(String, String)> = attempts_as(&app.pool, |a| (a.trigger, a.outcome)).await;
    assert_eq!(
        seen,
        [("manual".into(), "WON".into()), ("cron".into(), "BUSY".into())],
        "the busy fire was not tried again"
    );
    assert_eq!(successes_by_date(&app.pool).await.len(), 1);
}

#[tokio::test]
async fn a_held_fire_stops_waiting_at_shutdown() {
    let (from, to) = (ymd(2026, 3, 27), ymd(2026, 3, 31));
    let app = replica(from, |_| {}).await;
    held_by_an_operator(&app.pool, Duration::from_secs(600)).await;
    let slot = slot_for(to);
    let waiting = tokio::spawn({
        let job = app.job.clone();
        async move { fire_until_run(&job, Trigger::Cron, slot, Request::CatchUp { target: to }, None).await }
    });
    poll_until("the first try to be held", Duration::from_secs(30), async || {
        (!attempts(&app.pool).await.is_empty()).then_some(())
    })
    .await;

    app.job.shutdown(Duration::from_secs(1)).await;
    let fired = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("the retry ends at shutdown")
        .unwrap();
    assert!(matches!(fired, Err(Refused::ShuttingDown)), "{fired:?}");
    assert_eq!(attempts(&app.pool).await.len(), 1, "no try after shutdown");
}

#[tokio::test]
async fn a_cron_fire_that_meets_a_held_lock_settles_when_the_lease_ends_not_at_the_next_slot() {
    // The cron fires once, a few seconds from now: there is no next slot to wait for, and no
    // earlier one to catch up at start.
    let database = crate::common::database::TestDatabase::create().await;
    let (today, fire_at) = {
        let pool = finesettle::store::database::connect(database.url(), 1).await.unwrap();
        let today = finesettle::store::clock::business_today(&pool, Shanghai).await.unwrap();
        (today, whole_second_in(&pool, 6).await)
    };
    let from = today - Days::new(3);
    let app = crate::common::spawn_on_database(database, |s| {
        s.instance_id = "replica-a".to_owned();
        s.scheduler_enabled = true;
        s.job.settle_cron = once_at(fire_at);
        s.job.settle_start_date = Some(from);
        s.job.lock_at_least_for = Duration::ZERO;
        s.job.batch_size = 200;
    })
    .await;
    seed(&app.pool, &recent_loans(113, today)).await;
    // The operator's run holds the lock past the fire instant.
    let now = finesettle::store::clock::now(&app.pool).await.unwrap();
    let held_for = (fire_at - now).to_std().unwrap() + Duration::from_secs(3);
    let lease_end = held_by_an_operator(&app.pool, held_for).await;

    let dates = days(from, settle_target(fire_at, Shanghai));
    poll_until(
        "the held fire to settle its dates",
        Duration::from_secs(60),
        async || (successes_by_date(&app.pool).await.len() == dates.len()).then_some(()),
    )
    .await;
    assert_eq!(timeline(&app.pool).await, held_then_won("cron", fire_at));
    assert!(first_started_at(&app.pool).await >= lease_end);
    assert_settled(&app.pool, &dates).await;
}

#[tokio::test]
async fn the_catch_up_at_start_waits_for_a_held_lock_too() {
    let database = crate::common::database::TestDatabase::create().await;
    let (today, lease_end) = {
        let pool = finesettle::store::database::connect(database.url(), 1).await.unwrap();
        finesettle::store::database::migrate(&pool).await.unwrap();
        let today = finesettle::store::clock::business_today(&pool, Shanghai).await.unwrap();
        seed(&pool, &recent_loans(114, today)).await;
        (today, held_by_an_operator(&pool, Duration::from_secs(4)).await)
    };
    // The daily cron's latest slot has passed: a replica starting now catches up, and meets the
    // operator's lock.
    let app = crate::common::spawn_on_database(database, |s| {
        s.instance_id = "replica-a".to_owned();
        s.scheduler_enabled = true;
        s.job.settle_start_date = Some(today - Days::new(4));
        s.job.lock_at_least_for = Duration::ZERO;
        s.job.batch_size = 200;
    })
    .await;
    let now = finesettle::store::clock::now(&app.pool).await.unwrap();
    let slot = app.job.schedule().latest_at_or_before(now).unwrap();
    let target = settle_target(slot, Shanghai);
    let dates = days(today - Days::new(4), target);

    poll_until(
        "the catch-up to settle its dates",
        Duration::from_secs(60),
        async || (successes_by_date(&app.pool).await.len() == dates.len()).then_some(()),
    )
    .await;
    let seen: Vec<(String, String, Option<String>)> =
        attempts_as(&app.pool, |a| (a.trigger, a.outcome, a.holder)).await;
    assert_eq!(
        seen,
        [
            ("startup".into(), "HELD".into(), Some(OPERATOR.into())),
            ("startup".into(), "WON".into(), None)
        ]
    );
    assert!(first_started_at(&app.pool).await >= lease_end);
    assert_settled(&app.pool, &dates).await;
}

//! Issue 19: replicas whose own clocks are wrong. The database's clock decides when the job fires
//! and which dates have ended, so one replica 3 hours fast, one 3 hours slow and one whose clock
//! jumps a day forward and then two back mid-run settle exactly what three true clocks would.
//!
//! The business zone is chosen so that the database's local time is between 22:00 and 23:00:
//! three hours later is already tomorrow, so a replica trusting its own clock would settle today,
//! a date still in progress.

use std::time::Duration;

use chrono::{DateTime, Days, NaiveDate, TimeDelta, Timelike, Utc};
use chrono_tz::Tz;
use finesettle::clock::Clock;
use finesettle::config::Settings;
use finesettle::domain::{LoanTerms, business_date};
use sqlx::PgPool;

use crate::common::checks::{assert_settled_exactly_once, executions, poll_until};
use crate::common::data::days;
use crate::common::database::TestDatabase;
use crate::common::process::Finesettle;
use crate::common::seed::{migrated_db, recent_loans, seed};
use crate::common::{TestApp, spawn_with_clock};

/// A fire every four seconds: several fires per replica within the test.
const EVERY_FOUR_SECONDS: &str = "*/4 * * * * *";
/// How far a fire's instant may lie from its slot, by the database's clock.
const FIRE_TOLERANCE: TimeDelta = TimeDelta::seconds(2);

/// A fixed-offset zone in which `now` is between 22:00 and 23:00.
fn zone_at_ten_pm(now: DateTime<Utc>) -> Tz {
    let hours_ahead = (22 - i64::from(now.hour())).rem_euclid(24);
    // Etc/GMT zones span UTC-12 to UTC+14, and their names have the sign the other way round.
    let hours_ahead = if hours_ahead > 14 {
        hours_ahead - 24
    } else {
        hours_ahead
    };
    let name = match hours_ahead {
        0 => "Etc/GMT".to_owned(),
        h => format!("Etc/GMT{:+}", -h),
    };
    name.parse().expect("an Etc/GMT zone")
}

/// A migrated database seeded with `recent_loans(loans_seed, today)`, in a zone where the
/// database's clock is between 22:00 and 23:00: (database, pool, zone, today in it, loans).
async fn seeded_at_ten_pm(loans_seed: u64) -> (TestDatabase, PgPool, Tz, NaiveDate, Vec<(i64, LoanTerms)>) {
    let (database, pool) = migrated_db().await;
    let tz = zone_at_ten_pm(finesettle::store::clock::now(&pool).await.unwrap());
    let today = business_date(finesettle::store::clock::now(&pool).await.unwrap(), tz);
    let loans = seed(&pool, &recent_loans(loans_seed, today)).await;
    (database, pool, tz, today, loans)
}

/// A cron fire as the attempt timeline recorded it.
#[derive(Debug, sqlx::FromRow)]
struct Fire {
    instance_id: String,
    fired_at: DateTime<Utc>,
    recorded_at: DateTime<Utc>,
    outcome: String,
}

async fn cron_fires(pool: &PgPool) -> Vec<Fire> {
    sqlx::query_as(
        "select instance_id, fired_at, recorded_at, outcome from task_attempt \
         where trigger = 'cron' order by id",
    )
    .fetch_all(pool)
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn replicas_with_wrong_clocks_fire_on_the_database_clock_and_settle_only_ended_dates() {
    let (database, pool, tz, today, loans) = seeded_at_ten_pm(19).await;
    let start = today - Days::new(3);

    let settings = |id: &'static str| {
        move |s: &mut Settings| {
            s.instance_id = id.to_owned();
            s.business_tz = tz;
            s.scheduler_enabled = true;
            s.job.settle_cron = EVERY_FOUR_SECONDS.to_owned();
            s.job.settle_start_date = Some(start);
            s.job.lock_at_most_for = Duration::from_secs(5);
            s.job.lock_at_least_for = Duration::ZERO;
        }
    };
    let jumping = Clock::system();
    let replicas: Vec<TestApp> = vec![
        spawn_with_clock(database.share(), Clock::shifted(TimeDelta::hours(3)), settings("fast")).await,
        spawn_with_clock(database.share(), Clock::shifted(TimeDelta::hours(-3)), settings("slow")).await,
        spawn_with_clock(database.share(), jumping.clone(), settings("jumping")).await,
    ];

    // The jumping replica's clock steps a day and two hours forward once every replica has fired,
    // then two days and four hours back: neither step makes it fire early or lose a slot.
    let fired_by = async |id: &str| cron_fires(&pool).await.iter().filter(|f| f.instance_id == id).count();
    let fired_at_least = async |n: usize| {
        let counts = [
            fired_by("fast").await,
            fired_by("slow").await,
            fired_by("jumping").await,
        ];
        counts.iter().all(|c| *c >= n).then_some(())
    };
    poll_until("a first fire of every replica", Duration::from_secs(30), async || {
        fired_at_least(1).await
    })
    .await;
    jumping.jump(TimeDelta::hours(26));
    poll_until("two more fires of every replica", Duration::from_secs(30), async || {
        fired_at_least(3).await
    })
    .await;
    jumping.jump(TimeDelta::hours(-52));
    poll_until("two more fires of every replica", Duration::from_secs(30), async || {
        fired_at_least(5).await
    })
    .await;
    for replica in replicas {
        replica.stop().await;
    }

    let fires = assert_on_the_database_clock(&pool, &loans, start, today, tz).await;
    assert!(
        fires.iter().any(|f| f.outcome == "NOTHING_TO_DO"),
        "later fires find every ended date settled: {fires:?}"
    );
}

/// The same with the real release binary under Debian's `faketime`: one process three hours
/// fast, one three hours slow, PostgreSQL on the true clock. Proves the binary reads its clock
/// through the seam the test above shifts, not around it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_binaries_under_faketime_fire_on_the_database_clock_and_settle_only_ended_dates() {
    let (database, pool, tz, today, loans) = seeded_at_ten_pm(23).await;
    let start = today - Days::new(3);
    let replica = |id: &str, offset: &str| {
        Finesettle::under_faketime(database.url(), id, offset)
            .env("FINESETTLE_BUSINESS_TZ", tz.name())
            .env("FINESETTLE_SETTLE_CRON", EVERY_FOUR_SECONDS)
            .env("FINESETTLE_SETTLE_START_DATE", start.to_string())
            .env("FINESETTLE_LOCK_AT_MOST_FOR", "5s")
            .env("FINESETTLE_LOCK_AT_LEAST_FOR", "0s")
            .spawn(&["serve"])
    };
    let mut replicas = [replica("fast", "+3h"), replica("slow", "-3h")];
    let fired_by = async |id: &str| cron_fires(&pool).await.iter().filter(|f| f.instance_id == id).count();
    poll_until("three fires of each process", Duration::from_secs(60), async || {
        (fired_by("fast").await >= 3 && fired_by("slow").await >= 3).then_some(())
    })
    .await;
    for replica in &mut replicas {
        replica.assert_running();
    }
    drop(replicas);
    assert_on_the_database_clock(&pool, &loans, start, today, tz).await;
}

/// Every cron fire happened within two seconds of its slot by the database's clock; no date that
/// had not ended by it (`today` in `tz`) has an execution; every ended date from `start` has
/// exactly one SUCCESS, with the fines a recomputation gives. Answers the fires.
async fn assert_on_the_database_clock(
    pool: &PgPool,
    loans: &[(i64, LoanTerms)],
    start: NaiveDate,
    today: NaiveDate,
    tz: Tz,
) -> Vec<Fire> {
    let fires = cron_fires(pool).await;
    for fire in &fires {
        let late = fire.recorded_at - fire.fired_at;
        assert!(
            late.abs() < FIRE_TOLERANCE,
            "{} fired {} ms from its slot by the database's clock: {fire:?}",
            fire.instance_id,
            late.num_milliseconds()
        );
    }
    let ran: Vec<NaiveDate> = executions(pool).await.iter().map(|e| e.business_date).collect();
    assert!(
        ran.iter().all(|d| *d < today),
        "dates run: {ran:?}, today {today} ({tz})"
    );
    assert_settled_exactly_once(pool, loans, &days(start, today - Days::new(1))).await;
    fires
}

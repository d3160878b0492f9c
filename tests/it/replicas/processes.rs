//! Issue test 2: three OS processes of the real binary (`finesettle serve`) on one database,
//! each firing the job on a fast cron, catching up several weeks a few dates per fire.

use std::collections::{BTreeSet, HashSet};
use std::time::Duration;

use chrono::{DateTime, Days, NaiveDate, Utc};
use chrono_tz::Asia::Shanghai;
use sqlx::PgPool;

use crate::common::checks::{assert_settled_exactly_once, attempts, executions, poll_until};
use crate::common::data::days;
use crate::common::process::{Finesettle, Signal};
use crate::common::seed::{migrated_db, recent_loans, seed};

const REPLICAS: [&str; 3] = ["replica-a", "replica-b", "replica-c"];
/// Every two seconds, in every process at the same instants.
const CRON: &str = "*/2 * * * * *";
/// Dates per fire: the weeks to catch up take several fires.
const MAX_DAYS: u64 = 6;
const CATCH_UP_DAYS: u64 = 24;

async fn business_today(pool: &PgPool) -> NaiveDate {
    finesettle::store::clock::business_today(pool, Shanghai).await.unwrap()
}

async fn last_success(pool: &PgPool) -> Option<NaiveDate> {
    finesettle::settlement::records::last_success(pool, &"settle-fines".into())
        .await
        .unwrap()
}

#[tokio::test]
async fn three_processes_on_a_fast_cron_settle_each_date_once() {
    let (database, pool) = migrated_db().await;
    // Fires settle through yesterday by the database clock in the business zone.
    let today = business_today(&pool).await;
    let loans = seed(&pool, &recent_loans(41, today)).await;
    let start = today - Days::new(CATCH_UP_DAYS);
    let replicas: Vec<_> = REPLICAS
        .iter()
        .map(|id| {
            Finesettle::new(database.url(), id)
                .env("FINESETTLE_SETTLE_CRON", CRON)
                .env("FINESETTLE_SETTLE_START_DATE", start.to_string())
                .env("FINESETTLE_BACKFILL_MAX_DAYS", MAX_DAYS.to_string())
                // Shorter than the cron period: a fire that ends at once is not repeated by a
                // replica whose trigger of the same slot comes a moment later, and the lock is
                // free again for the next slot.
                .env("FINESETTLE_LOCK_AT_LEAST_FOR", "1s")
                .env("FINESETTLE_SETTLE_BATCH_SIZE", "200")
                .spawn(&["serve"])
        })
        .collect();

    // Caught up to yesterday, a few dates per fire...
    let yesterday = today.pred_opt().unwrap();
    poll_until(
        "the replicas to settle every date through yesterday",
        Duration::from_secs(90),
        async || last_success(&pool).await.filter(|d| *d >= yesterday),
    )
    .await;
    // ...then every replica handles at least two more fires, which find nothing to do.
    let caught_up: DateTime<Utc> = finesettle::store::clock::now(&pool).await.unwrap();
    poll_until(
        "two more cron fires on every replica",
        Duration::from_secs(30),
        async || {
            let late: Vec<_> = attempts(&pool)
                .await
                .into_iter()
                .filter(|a| a.fired_at > caught_up)
                .collect();
            REPLICAS
                .iter()
                .all(|id| late.iter().filter(|a| a.instance_id == *id).count() >= 2)
                .then_some(())
        },
    )
    .await;

    for replica in &replicas {
        replica.signal(Signal::Term);
    }
    for replica in replicas {
        replica.wait(Duration::from_secs(60)).await.assert_success();
    }

    // Every date from the start through the last target once (yesterday, or today's yesterday if
    // the business date turned during the test).
    let settled_through = last_success(&pool).await.unwrap();
    assert!(settled_through >= yesterday && settled_through < business_today(&pool).await);
    let dates = days(start, settled_through);
    let all = executions(&pool).await;
    assert_eq!(
        all.len(),
        dates.len(),
        "one execution per date, none failed or repeated: {all:#?}"
    );
    assert!(all.iter().all(|e| e.status == "SUCCESS"), "{all:#?}");

    // Every replica recorded its fires; the winning ones hold distinct tokens, and each date was
    // settled by a winner, with its token.
    let timeline = attempts(&pool).await;
    for id in REPLICAS {
        assert!(timeline.iter().any(|a| a.instance_id == id), "{id} recorded no attempt");
    }
    let allowed = ["WON", "HELD", "BUSY", "NOTHING_TO_DO"];
    assert!(
        timeline.iter().all(|a| allowed.contains(&a.outcome.as_str())),
        "{timeline:#?}"
    );
    let won: Vec<(String, i64)> = timeline
        .iter()
        .filter(|a| a.outcome == "WON")
        .map(|a| {
            (
                a.instance_id.clone(),
                a.fencing_token.expect("a won attempt has a token"),
            )
        })
        .collect();
    let tokens: HashSet<i64> = won.iter().map(|(_, token)| *token).collect();
    assert_eq!(tokens.len(), won.len(), "a fencing token won twice: {won:?}");
    assert!(won.len() as u64 >= CATCH_UP_DAYS / MAX_DAYS, "{won:?}");
    for e in &all {
        assert!(
            won.contains(&(e.instance_id.clone(), e.fencing_token)),
            "{e:?} was not run by a won fire"
        );
    }
    let triggers: BTreeSet<&str> = all.iter().map(|e| e.trigger.as_str()).collect();
    assert!(triggers.contains("cron"), "{triggers:?}");

    // Released: held no longer than lock_at_least_for (1 s) after the last acquisition, not
    // until lock_at_most_for (15 minutes by default).
    let released: bool = sqlx::query_scalar(
        "select locked_until <= greatest(now(), locked_at + interval '1 second') from task_lock \
         where task_name = 'settle-fines'",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert!(released, "the lock was released at shutdown");
    assert_settled_exactly_once(&pool, &loans, &dates).await;
}

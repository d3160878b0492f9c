//! The harness itself, on an asynchronous cluster: the roles it starts with, WAL held back from
//! the standbys and released (what a test of a promotion that loses writes builds on), and a
//! teardown that leaves no process and no file behind.

use std::time::Duration;

use sqlx::{Connection, PgConnection};

use crate::common::checks::{eventually, poll_until};
use crate::common::ha::{HaCluster, Replication, process_running};

/// Standbys whose replay has reached `lsn`, as the primary's walsenders report it.
async fn standbys_replayed(primary: &mut PgConnection, lsn: &str) -> i64 {
    sqlx::query_scalar("select count(*) from pg_stat_replication where replay_lsn >= $1::pg_lsn")
        .bind(lsn)
        .fetch_one(primary)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn held_wal_keeps_a_commit_from_the_standbys_until_released_and_drop_leaves_nothing() {
    let cluster = HaCluster::start(Replication::Asynchronous).await;
    let members = cluster.members().await;
    let mut roles: Vec<&str> = members.iter().map(|m| m.role.as_str()).collect();
    roles.sort();
    assert_eq!(roles, ["leader", "replica", "replica"], "{members:?}");
    let mut primary = PgConnection::connect(&cluster.url("postgres")).await.unwrap();
    let in_recovery: bool = sqlx::query_scalar("select pg_is_in_recovery()")
        .fetch_one(&mut primary)
        .await
        .unwrap();
    assert!(!in_recovery, "the proxy leads to the primary");

    cluster.hold_wal().await;
    sqlx::raw_sql("create table held (n int); insert into held values (1)")
        .execute(&mut primary)
        .await
        .expect("an asynchronous primary commits without its standbys");
    let lsn: String = sqlx::query_scalar("select pg_current_wal_lsn()::text")
        .fetch_one(&mut primary)
        .await
        .unwrap();
    // Absence takes a while to show: for two seconds, no standby replays the commit.
    let held_until = tokio::time::Instant::now() + Duration::from_secs(2);
    while tokio::time::Instant::now() < held_until {
        assert_eq!(
            standbys_replayed(&mut primary, &lsn).await,
            0,
            "a held standby replayed {lsn}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    cluster.release_wal();
    eventually(
        "both standbys to replay the commit once released",
        Duration::from_secs(30),
        async || standbys_replayed(&mut primary, &lsn).await == 2,
    )
    .await;
    primary.close().await.unwrap();

    let dir = cluster.dir().to_owned();
    let postmasters = cluster.postmasters();
    assert_eq!(postmasters.len(), 3);
    drop(cluster);
    assert!(!dir.exists(), "{} removed", dir.display());
    poll_until("every postmaster to be gone", Duration::from_secs(10), async || {
        postmasters.iter().all(|pid| !process_running(*pid)).then_some(())
    })
    .await;
}

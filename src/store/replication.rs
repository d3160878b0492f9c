//! Whether the primary has a synchronous standby: what a failover may lose.

use crate::domain::failover::Replication;

/// The primary's replication as an ordinary role sees it.
///
/// `synchronous_standby_names` and `synchronous_commit` are readable by every role. So are the
/// rows of `pg_stat_replication` (one per connected standby), though without
/// `pg_read_all_stats` their columns, `sync_state` included, are null: so "synchronous" is told
/// from the settings (with standby names set, a commit waits for a standby's confirmation, and
/// one that cannot get it waits rather than being acknowledged), and the rows only count the
/// standbys.
pub async fn read(executor: impl sqlx::PgExecutor<'_>) -> sqlx::Result<Replication> {
    let row = sqlx::query!(
        r#"
        select current_setting('synchronous_standby_names') <> ''
                   and current_setting('synchronous_commit') in ('on', 'remote_write', 'remote_apply')
                   as "synchronous!",
               (select count(*) from pg_stat_replication) as "standbys!"
        "#
    )
    .fetch_one(executor)
    .await?;
    Ok(Replication::from_facts(row.synchronous, row.standbys))
}

//! Which database cluster and timeline the service is talking to, and when a timeline was first
//! noticed (`database_timeline`): what `crate::failover` compares to notice a promotion.

use chrono::{DateTime, Utc};

use crate::domain::failover::DatabaseIdentity;

/// SQLSTATE `insufficient_privilege`.
const INSUFFICIENT_PRIVILEGE: &str = "42501";

/// The cluster's system identifier and the timeline the primary writes WAL on; `None` on a node
/// in recovery (a standby has no WAL insertion timeline; the service writes nowhere there).
///
/// The timeline is the first 8 hex digits of the current WAL file's name: it changes the moment a
/// standby is promoted, where `pg_control_checkpoint()` lags until the end-of-recovery
/// checkpoint. `pg_control_system()` may be executed by any role unless a DBA revoked it; then
/// the identifier is unknown (`None`), and a failover is told by the timeline alone.
pub async fn read(conn: &mut sqlx::PgConnection) -> sqlx::Result<Option<DatabaseIdentity>> {
    let full = sqlx::query!(
        r#"
        select (select system_identifier from pg_control_system()) as system_identifier,
               case when pg_is_in_recovery() then null
                    else ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint
               end as timeline
        "#
    )
    .fetch_one(&mut *conn)
    .await;
    let (system_identifier, timeline) = match full {
        Ok(row) => (row.system_identifier, row.timeline),
        Err(e) if is_insufficient_privilege(&e) => {
            let timeline = sqlx::query_scalar!(
                r#"
                select case when pg_is_in_recovery() then null
                            else ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint
                       end as timeline
                "#
            )
            .fetch_one(&mut *conn)
            .await?;
            (None, timeline)
        }
        Err(e) => return Err(e),
    };
    Ok(timeline.map(|timeline| DatabaseIdentity {
        system_identifier,
        timeline,
    }))
}

/// Records that `instance_id` noticed `identity`'s timeline, unless a replica already did, and
/// answers when it was first noticed (by the database's clock): the same instant for every
/// replica, so that they all raise the same alert.
pub async fn first_seen(
    executor: impl sqlx::PgExecutor<'_> + Copy,
    identity: &DatabaseIdentity,
    instance_id: &str,
) -> sqlx::Result<DateTime<Utc>> {
    sqlx::query!(
        r#"
        insert into database_timeline (timeline, system_identifier, first_seen_by)
        values ($1, $2, $3)
        on conflict (timeline) do nothing
        "#,
        identity.timeline,
        identity.system_identifier,
        instance_id
    )
    .execute(executor)
    .await?;
    // A statement of its own: it sees the row of a replica whose insert won the race.
    sqlx::query_scalar!(
        "select first_seen_at from database_timeline where timeline = $1",
        identity.timeline
    )
    .fetch_one(executor)
    .await
}

/// The current fencing token of `task_name` in `task_lock`, if the task was ever locked.
pub async fn current_token(
    executor: impl sqlx::PgExecutor<'_>,
    task_name: &crate::domain::TaskName,
) -> sqlx::Result<Option<i64>> {
    sqlx::query_scalar!(
        "select fencing_token from task_lock where task_name = $1",
        task_name.as_str()
    )
    .fetch_optional(executor)
    .await
}

fn is_insufficient_privilege(e: &sqlx::Error) -> bool {
    e.as_database_error()
        .and_then(|d| d.code())
        .is_some_and(|code| code == INSUFFICIENT_PRIVILEGE)
}

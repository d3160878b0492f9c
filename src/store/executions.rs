//! Execution records (`task_execution`): one row per business date a run worked on.
//!
//! A row is inserted RUNNING when a date starts, so other replicas and operators see it running,
//! and ends SUCCESS (in the same transaction as the date's writes) or FAILED. The partial unique
//! index `task_execution_one_success` lets the database, not the code, guarantee at most one
//! SUCCESS per `(task_name, business_date)`.
//!
//! These are the plain queries. The settlement's writes go through `settlement::records`, which
//! wraps each in a fenced transaction; reads (the admin API, planning) may use them directly.

use std::collections::HashSet;

use chrono::{DateTime, NaiveDate, Utc};
use serde::Serialize;
use sqlx::PgConnection;
use utoipa::ToSchema;

use super::PageRequest;
use super::rows::{find_by_id, newest_first_of_task, select_rows};
use crate::domain::execution::{ExecutionStatus, Trigger};
use crate::domain::{FencingToken, TaskName};

// The row as stored is the shape the API serves: one type (the doc comment below is the
// OpenAPI description).
/// One business date worked on by one run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct Execution {
    pub id: i64,
    #[schema(value_type = String)]
    pub task_name: TaskName,
    pub business_date: NaiveDate,
    /// `cron`, `startup` or `manual`.
    #[schema(value_type = String)]
    pub trigger: Trigger,
    pub instance_id: String,
    #[schema(value_type = i64)]
    pub fencing_token: FencingToken,
    pub started_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
    /// `RUNNING`, `SUCCESS` or `FAILED`.
    #[schema(value_type = String)]
    pub status: ExecutionStatus,
    pub affected_rows: i64,
    pub error: Option<String>,
}

/// What a new execution needs.
#[derive(Debug, Clone, Copy)]
pub struct NewExecution<'a> {
    pub task_name: &'a TaskName,
    pub business_date: NaiveDate,
    pub trigger: Trigger,
    pub instance_id: &'a str,
    pub fencing_token: FencingToken,
}

/// Inserts a RUNNING execution unless the date already has a SUCCESS; `None` then.
///
/// The existence check and the insert are one statement; the unique index still has the last
/// word at the end of the date, when the execution becomes SUCCESS.
pub async fn insert_running(conn: &mut PgConnection, new: &NewExecution<'_>) -> sqlx::Result<Option<i64>> {
    sqlx::query_scalar!(
        r#"
        insert into task_execution (task_name, business_date, trigger, instance_id, fencing_token)
        select $1, $2, $3, $4, $5
        where not exists (
            select 1 from task_execution
            where task_name = $1 and business_date = $2 and status = 'SUCCESS'
        )
        returning id
        "#,
        new.task_name.as_str(),
        new.business_date,
        new.trigger.as_str(),
        new.instance_id,
        new.fencing_token.0
    )
    .fetch_optional(conn)
    .await
}

/// The SUCCESS execution of a date, if any.
pub async fn find_success(
    executor: impl sqlx::PgExecutor<'_>,
    task_name: &TaskName,
    business_date: NaiveDate,
) -> sqlx::Result<Option<i64>> {
    sqlx::query_scalar!(
        r#"
        select id from task_execution
        where task_name = $1 and business_date = $2 and status = 'SUCCESS'
        "#,
        task_name.as_str(),
        business_date
    )
    .fetch_optional(executor)
    .await
}

/// Ends the RUNNING executions that `$which` picks (a condition on `$arg`s), setting `$set`
/// besides the end: how many ended. Only a RUNNING execution ends, once.
///
/// `finished_at` is `clock_timestamp()`, not `now()`: this runs inside the date's transaction,
/// where `now()` is frozen at the transaction's start and would hide the date's duration.
macro_rules! end_running {
    ($conn:expr, set $set:tt, where $which:tt $(, $arg:expr)*) => {
        sqlx::query!(
            "update task_execution set finished_at = clock_timestamp(), " + $set
                + " where status = 'RUNNING' and " + $which,
            $($arg),*
        )
        .execute($conn)
        .await
        .map(|done| done.rows_affected())
    };
}

/// RUNNING → SUCCESS with the number of rows the date wrote. `false` when the execution was no
/// longer RUNNING (nothing changed then).
pub async fn mark_success(conn: &mut PgConnection, id: i64, affected_rows: i64) -> sqlx::Result<bool> {
    let ended = end_running!(conn, set "status = 'SUCCESS', affected_rows = $2", where "id = $1", id, affected_rows)?;
    Ok(ended == 1)
}

/// RUNNING → FAILED with the error. `false` when the execution was no longer RUNNING.
pub async fn mark_failed(conn: &mut PgConnection, id: i64, error: &str) -> sqlx::Result<bool> {
    let ended = end_running!(conn, set "status = 'FAILED', error = $2", where "id = $1", id, error)?;
    Ok(ended == 1)
}

/// Marks every RUNNING execution of `task_name` started under a fencing token older than
/// `current_token` FAILED: their holder lost the lock, so they can never finish. Returns how many.
pub async fn abandon_older(
    conn: &mut PgConnection,
    task_name: &TaskName,
    current_token: FencingToken,
) -> sqlx::Result<u64> {
    let error = format!("abandoned: the lock passed to fencing token {current_token}");
    end_running!(
        conn,
        set "status = 'FAILED', error = $3",
        where "task_name = $1 and fencing_token < $2",
        task_name.as_str(),
        current_token.0,
        error
    )
}

/// The latest business date with a SUCCESS.
pub async fn last_success(
    executor: impl sqlx::PgExecutor<'_>,
    task_name: &TaskName,
) -> sqlx::Result<Option<NaiveDate>> {
    sqlx::query_scalar!(
        r#"
        select business_date from task_execution
        where task_name = $1 and status = 'SUCCESS'
        order by business_date desc
        limit 1
        "#,
        task_name.as_str()
    )
    .fetch_optional(executor)
    .await
}

/// The dates from `from` through `to` (inclusive) that have no SUCCESS, oldest first, at most
/// `limit`: the gaps behind later SUCCESSes as well as the dates after the last one.
pub async fn unsettled_between(
    executor: impl sqlx::PgExecutor<'_>,
    task_name: &TaskName,
    from: NaiveDate,
    to: NaiveDate,
    limit: i64,
) -> sqlx::Result<Vec<NaiveDate>> {
    sqlx::query_scalar!(
        r#"
        select d::date as "business_date!"
        from generate_series($2::date::timestamp, $3::date::timestamp, interval '1 day') as d
        -- one index probe per date (task_execution_one_success)
        where not exists (
            select 1 from task_execution e
            where e.task_name = $1 and e.business_date = d::date and e.status = 'SUCCESS')
        order by d
        limit $4
        "#,
        task_name.as_str(),
        from,
        to,
        limit
    )
    .fetch_all(executor)
    .await
}

/// Which of `dates` already have a SUCCESS.
pub async fn settled_among(
    executor: impl sqlx::PgExecutor<'_>,
    task_name: &TaskName,
    dates: &[NaiveDate],
) -> sqlx::Result<HashSet<NaiveDate>> {
    let rows = sqlx::query_scalar!(
        r#"
        select business_date from task_execution
        where task_name = $1 and status = 'SUCCESS' and business_date = any($2)
        "#,
        task_name.as_str(),
        dates
    )
    .fetch_all(executor)
    .await?;
    Ok(rows.into_iter().collect())
}

pub async fn find(executor: impl sqlx::PgExecutor<'_>, id: i64) -> sqlx::Result<Option<Execution>> {
    find_by_id!(Execution, executor, id)
}

newest_first_of_task!(Execution);

/// The newest execution of `task_name` (the jobs view): the first row of [`list`]'s first page.
pub async fn latest(executor: impl sqlx::PgExecutor<'_>, task_name: &TaskName) -> sqlx::Result<Option<Execution>> {
    let newest = PageRequest { after: 0, limit: 1 };
    Ok(list(executor, task_name, newest).await?.into_iter().next())
}

/// The execution a given run (fencing token) started for `business_date`.
pub async fn find_by_token(
    executor: impl sqlx::PgExecutor<'_>,
    task_name: &TaskName,
    business_date: NaiveDate,
    fencing_token: FencingToken,
) -> sqlx::Result<Option<Execution>> {
    select_rows!(
        Execution,
        r#"
        where task_name = $1 and business_date = $2 and fencing_token = $3
        order by id desc
        limit 1
        "#,
        task_name.as_str(),
        business_date,
        fencing_token.0
    )
    .fetch_optional(executor)
    .await
}

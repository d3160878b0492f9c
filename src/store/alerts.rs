//! Alerts, the webhook outbox (`alert_delivery`), and job registrations.
//!
//! The rules that decide *whether* to raise live in `crate::alerts::conditions`; these queries
//! only fetch the facts those rules need and write the outcome. Every instant written here comes
//! from the database clock (`now()`).

use chrono::{DateTime, NaiveDate, Utc};
use serde_json::Value;
use uuid::Uuid;

use super::PageRequest;
use super::rows::{returning_rows, select_rows};
use crate::domain::TaskName;
use crate::domain::alert::{Alert, AlertKind, AlertState, NewAlert};

// --- job registration --------------------------------------------------------------------

/// Records that a service runs `task_name`, unless one already did: the first instant stays.
///
/// The job's planner may have created the row before (it records the start date, possibly from
/// `finesettle settle` before any `serve`); such a row has no instant yet and gets this one.
pub async fn register_job(executor: impl sqlx::PgExecutor<'_>, task_name: &TaskName) -> sqlx::Result<()> {
    sqlx::query!(
        r#"
        insert into job_registration (task_name, first_seen_at) values ($1, now())
        on conflict (task_name) do update
            set first_seen_at = now()
            -- a replica registered it already: never moves
            where job_registration.first_seen_at is null
        "#,
        task_name.as_str()
    )
    .execute(executor)
    .await?;
    Ok(())
}

/// What MISSED needs to know about a job besides its schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registration {
    /// When a service first registered the job; `None` while only commands have planned dates.
    pub first_seen_at: Option<DateTime<Utc>>,
    /// The start date the job's first plan recorded (`crate::store::start_date`).
    pub start_date: Option<NaiveDate>,
}

/// The registration of `task_name`, if a service registered it or the job planned a date.
pub async fn registration(
    executor: impl sqlx::PgExecutor<'_>,
    task_name: &TaskName,
) -> sqlx::Result<Option<Registration>> {
    sqlx::query_as!(
        Registration,
        "select first_seen_at, start_date from job_registration where task_name = $1",
        task_name.as_str()
    )
    .fetch_optional(executor)
    .await
}

// --- the facts the conditions need ---------------------------------------------------------

/// The latest FAILED execution of each date that has no SUCCESS and no FAILED alert yet.
#[derive(Debug, Clone)]
pub struct FailedExecution {
    pub id: i64,
    pub business_date: NaiveDate,
    pub error: Option<String>,
}

pub async fn failed_without_success(
    executor: impl sqlx::PgExecutor<'_>,
    task_name: &TaskName,
) -> sqlx::Result<Vec<FailedExecution>> {
    sqlx::query_as!(
        FailedExecution,
        r#"
        select distinct on (f.business_date) f.id, f.business_date, f.error
        from task_execution f
        where f.task_name = $1
          and f.status = 'FAILED'
          and not exists (
              select 1 from task_execution s
              where s.task_name = f.task_name and s.business_date = f.business_date and s.status = 'SUCCESS')
          -- already raised (active or resolved): raised once per kind, task and date
          and not exists (
              select 1 from alert a
              where a.kind = 'FAILED' and a.task_name = f.task_name and a.business_date = f.business_date)
        order by f.business_date, f.id desc
        "#,
        task_name.as_str()
    )
    .fetch_all(executor)
    .await
}

/// A RUNNING execution that started before `cutoff`, on a date without a TIMEOUT alert yet.
#[derive(Debug, Clone)]
pub struct RunningExecution {
    pub id: i64,
    pub business_date: NaiveDate,
    pub started_at: DateTime<Utc>,
}

pub async fn running_since_before(
    executor: impl sqlx::PgExecutor<'_>,
    task_name: &TaskName,
    cutoff: DateTime<Utc>,
) -> sqlx::Result<Vec<RunningExecution>> {
    sqlx::query_as!(
        RunningExecution,
        r#"
        select e.id, e.business_date, e.started_at
        from task_execution e
        where e.task_name = $1
          and e.status = 'RUNNING'
          and e.started_at < $2
          and not exists (
              select 1 from alert a
              where a.kind = 'TIMEOUT' and a.task_name = e.task_name and a.business_date = e.business_date)
        order by e.business_date, e.id
        "#,
        task_name.as_str(),
        cutoff
    )
    .fetch_all(executor)
    .await
}

/// An expected business date without SUCCESS and without a MISSED alert yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsettledDate {
    pub business_date: NaiveDate,
    /// Executions of any status for the date (0: nothing was even attempted).
    pub attempts: i64,
}

/// The dates from `first` through `last` that have no SUCCESS and no MISSED alert (active or
/// resolved), oldest first, at most `limit`.
///
/// One statement over the whole range rather than a query per date: two index probes per date
/// (`task_execution_one_success`, `alert_once`), so years of history cost a few milliseconds.
pub async fn unalerted_unsettled(
    executor: impl sqlx::PgExecutor<'_>,
    task_name: &TaskName,
    first: NaiveDate,
    last: NaiveDate,
    limit: i64,
) -> sqlx::Result<Vec<UnsettledDate>> {
    sqlx::query_as!(
        UnsettledDate,
        r#"
        select d::date as "business_date!",
               (select count(*) from task_execution e
                where e.task_name = $1 and e.business_date = d::date) as "attempts!"
        from generate_series($2::date::timestamp, $3::date::timestamp, interval '1 day') as d
        where not exists (
                  select 1 from task_execution e
                  where e.task_name = $1 and e.business_date = d::date and e.status = 'SUCCESS')
          -- raised once per kind, task and date, even after it resolved
          and not exists (
                  select 1 from alert a
                  where a.kind = 'MISSED' and a.task_name = $1 and a.business_date = d::date)
        order by d
        limit $4
        "#,
        task_name.as_str(),
        first,
        last,
        limit
    )
    .fetch_all(executor)
    .await
}

// --- raise and resolve ---------------------------------------------------------------------

/// Inserts the alert unless one exists for its kind, task and date. Only the replica whose
/// insert wins gets the row back; the others (waiting on the unique index meanwhile) get `None`.
pub async fn raise(
    executor: impl sqlx::PgExecutor<'_>,
    task_name: &TaskName,
    alert: &NewAlert,
) -> sqlx::Result<Option<Alert>> {
    returning_rows!(
        Alert,
        r#"
        insert into alert (kind, task_name, business_date, detail, execution_id)
        values ($1, $2, $3, $4, $5)
        on conflict on constraint alert_once do nothing
        "#,
        alert.kind.as_str(),
        task_name.as_str(),
        alert.business_date,
        alert.detail,
        alert.execution_id
    )
    .fetch_optional(executor)
    .await
}

/// Resolves every active alert of `task_name` whose cause is gone: FAILED and MISSED once the
/// date has a SUCCESS, TIMEOUT once its execution is no longer RUNNING. Never AUDIT: its date
/// (the first day of the audited month) has a SUCCESS from the start, and only a clean re-audit
/// says the differences are gone ([`resolve_active`]). Nor CLOCK_SKEW, which the replicas'
/// clock measurements resolve ([`resolve_active`] again), nor DATABASE_FAILOVER, which
/// `crate::failover` resolves once the dates it may have lost are settled again.
///
/// Rows another replica is resolving right now are skipped (`skip locked`): it will announce
/// them, and two replicas never wait on each other's rows in opposite orders.
pub async fn resolve_gone(executor: impl sqlx::PgExecutor<'_>, task_name: &TaskName) -> sqlx::Result<Vec<Alert>> {
    sqlx::query_as!(
        Alert,
        r#"
        with gone as (
            select a.id
            from alert a
            where a.task_name = $1
              and a.state = 'ACTIVE'
              and case a.kind
                  when 'TIMEOUT' then not exists (
                      select 1 from task_execution e where e.id = a.execution_id and e.status = 'RUNNING')
                  -- resolved by a clean re-audit of its month, never here
                  when 'AUDIT' then false
                  -- resolved when the clocks are back within the limit, never here: a SUCCESS
                  -- for its date says nothing about clocks
                  when 'CLOCK_SKEW' then false
                  -- resolved when the dates the failover may have lost are settled again, which
                  -- the evaluation judges with the start date (crate::failover)
                  when 'DATABASE_FAILOVER' then false
                  else exists (
                      select 1 from task_execution e
                      where e.task_name = a.task_name and e.business_date = a.business_date
                        and e.status = 'SUCCESS')
              end
            order by a.id
            for update skip locked
        )
        update alert a
        set state = 'RESOLVED', resolved_at = now()
        from gone
        where a.id = gone.id
        returning a.id, a.kind as "kind: AlertKind", a.task_name, a.business_date, a.state as "state: AlertState",
                  a.raised_at, a.resolved_at, a.detail, a.execution_id
        "#,
        task_name.as_str()
    )
    .fetch_all(executor)
    .await
}

/// Resolves the active alert of `kind` for `task_name` and `business_date`, if there is one (the
/// audit's, after a clean re-audit). `None` when none is active, or another transaction is
/// resolving it right now (`skip locked`: that one announces it).
pub async fn resolve_active(
    executor: impl sqlx::PgExecutor<'_>,
    kind: AlertKind,
    task_name: &TaskName,
    business_date: NaiveDate,
) -> sqlx::Result<Option<Alert>> {
    sqlx::query_as!(
        Alert,
        r#"
        with active as (
            select a.id
            from alert a
            where a.kind = $1 and a.task_name = $2 and a.business_date = $3 and a.state = 'ACTIVE'
            for update skip locked
        )
        update alert a
        set state = 'RESOLVED', resolved_at = now()
        from active
        where a.id = active.id
        returning a.id, a.kind as "kind: AlertKind", a.task_name, a.business_date, a.state as "state: AlertState",
                  a.raised_at, a.resolved_at, a.detail, a.execution_id
        "#,
        kind.as_str(),
        task_name.as_str(),
        business_date
    )
    .fetch_optional(executor)
    .await
}

/// The alert of `kind` for `task_name` and `business_date`, whatever its state: at most one
/// (`alert_once`).
pub async fn find(
    executor: impl sqlx::PgExecutor<'_>,
    kind: AlertKind,
    task_name: &TaskName,
    business_date: NaiveDate,
) -> sqlx::Result<Option<Alert>> {
    select_rows!(
        Alert,
        r#"
        where kind = $1 and task_name = $2 and business_date = $3
        "#,
        kind.as_str(),
        task_name.as_str(),
        business_date
    )
    .fetch_optional(executor)
    .await
}

/// The business dates of the active alerts of `kind` for `task_name`, oldest first.
pub async fn active_dates(
    executor: impl sqlx::PgExecutor<'_>,
    kind: AlertKind,
    task_name: &TaskName,
) -> sqlx::Result<Vec<NaiveDate>> {
    sqlx::query_scalar!(
        r#"
        select business_date
        from alert
        where kind = $1 and task_name = $2 and state = 'ACTIVE'
        order by business_date
        "#,
        kind.as_str(),
        task_name.as_str()
    )
    .fetch_all(executor)
    .await
}

// --- reading -------------------------------------------------------------------------------

/// Newest first; `state` `None` lists every state. The cursor is the last id seen.
pub async fn list(
    executor: impl sqlx::PgExecutor<'_>,
    state: Option<AlertState>,
    page: PageRequest,
) -> sqlx::Result<Vec<Alert>> {
    select_rows!(
        Alert,
        r#"
        where ($1::text is null or state = $1)
          and ($2::bigint = 0 or id < $2)
        order by id desc
        limit $3
        "#,
        state.map(AlertState::as_str),
        page.after,
        page.fetch()
    )
    .fetch_all(executor)
    .await
}

/// Active alerts per kind (kinds without any are absent), for the active-alert metric.
pub async fn count_active_by_kind(executor: impl sqlx::PgExecutor<'_>) -> sqlx::Result<Vec<(AlertKind, i64)>> {
    let rows = sqlx::query!(
        r#"select kind as "kind: AlertKind", count(*) as "count!" from alert where state = 'ACTIVE' group by kind order by kind"#
    )
    .fetch_all(executor)
    .await?;
    Ok(rows.into_iter().map(|r| (r.kind, r.count)).collect())
}

// --- the webhook outbox --------------------------------------------------------------------

/// Queues one notification. Called in the transaction of the raise or resolve it announces;
/// `alert_delivery_once` makes a second enqueue of the same event a no-op.
pub async fn enqueue_delivery(
    executor: impl sqlx::PgExecutor<'_>,
    alert_id: i64,
    event: &str,
    payload: &Value,
) -> sqlx::Result<()> {
    sqlx::query!(
        r#"
        insert into alert_delivery (alert_id, event, payload)
        values ($1, $2, $3)
        on conflict on constraint alert_delivery_once do nothing
        "#,
        alert_id,
        event,
        payload
    )
    .execute(executor)
    .await?;
    Ok(())
}

/// A notification this worker has claimed until its lease runs out.
#[derive(Debug, Clone)]
pub struct ClaimedDelivery {
    pub id: Uuid,
    pub alert_id: i64,
    pub event: String,
    pub payload: Value,
    /// Including this one.
    pub attempts: i32,
}

/// Claims up to `limit` due notifications: marks the attempt and pushes `next_attempt_at`
/// `lease_secs` ahead, so no other worker takes them while this one POSTs. Runs as one
/// statement, committed on return: the POST happens outside any transaction.
pub async fn claim_due_deliveries(
    executor: impl sqlx::PgExecutor<'_>,
    limit: i64,
    lease_secs: f64,
) -> sqlx::Result<Vec<ClaimedDelivery>> {
    sqlx::query_as!(
        ClaimedDelivery,
        r#"
        with due as (
            select d.id
            from alert_delivery d
            where d.delivered_at is null
              and d.next_attempt_at <= now()
              -- a resolve is never announced before its raise
              and not (d.event = 'resolved' and exists (
                  select 1 from alert_delivery r
                  where r.alert_id = d.alert_id and r.event = 'raised' and r.delivered_at is null))
            order by d.next_attempt_at, d.created_at
            limit $1
            for update skip locked
        )
        update alert_delivery d
        set attempts = d.attempts + 1,
            next_attempt_at = now() + make_interval(secs => $2)
        from due
        where d.id = due.id
        returning d.id, d.alert_id, d.event, d.payload, d.attempts
        "#,
        limit,
        lease_secs
    )
    .fetch_all(executor)
    .await
}

pub async fn mark_delivered(executor: impl sqlx::PgExecutor<'_>, id: Uuid) -> sqlx::Result<()> {
    sqlx::query!(
        "update alert_delivery set delivered_at = now(), last_error = null where id = $1 and delivered_at is null",
        id
    )
    .execute(executor)
    .await?;
    Ok(())
}

/// Records a failed attempt and when to try again.
pub async fn mark_failed(
    executor: impl sqlx::PgExecutor<'_>,
    id: Uuid,
    retry_in_secs: f64,
    error: &str,
) -> sqlx::Result<()> {
    sqlx::query!(
        r#"
        update alert_delivery
        set next_attempt_at = now() + make_interval(secs => $2), last_error = $3
        where id = $1 and delivered_at is null
        "#,
        id,
        retry_in_secs,
        error
    )
    .execute(executor)
    .await?;
    Ok(())
}

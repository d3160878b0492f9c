//! The job's start date as recorded in `job_registration.start_date`.
//!
//! `FINESETTLE_SETTLE_START_DATE` wins when it is set. Otherwise the first date the job ever
//! planned is recorded here once and never moves; see the migration `completeness` for why.

use chrono::NaiveDate;

use crate::domain::TaskName;

/// The recorded start date of `task_name`, if the job ever planned a date.
pub async fn recorded(executor: impl sqlx::PgExecutor<'_>, task_name: &TaskName) -> sqlx::Result<Option<NaiveDate>> {
    let row = sqlx::query_scalar!(
        "select start_date from job_registration where task_name = $1",
        task_name.as_str()
    )
    .fetch_optional(executor)
    .await?;
    Ok(row.flatten())
}

/// Records `first_planned` as the start date unless one is recorded already, and answers the
/// start date in force. The first writer wins, whichever replica or command it is. A row this
/// creates has no `first_seen_at`: planning is not a deployment (`store::alerts::register_job`).
pub async fn record_first(
    executor: impl sqlx::PgExecutor<'_>,
    task_name: &TaskName,
    first_planned: NaiveDate,
) -> sqlx::Result<NaiveDate> {
    sqlx::query_scalar!(
        r#"
        insert into job_registration (task_name, start_date) values ($1, $2)
        on conflict (task_name) do update
            -- never moves once written; the no-op update returns the row all the same
            set start_date = coalesce(job_registration.start_date, excluded.start_date)
        returning start_date as "start_date!"
        "#,
        task_name.as_str(),
        first_planned
    )
    .fetch_one(executor)
    .await
}

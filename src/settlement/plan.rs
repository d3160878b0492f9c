//! Which business dates a run settles (CONTRACT §2.3), and from which start date.
//!
//! Every run settles the dates from the start date through its target that have no SUCCESS,
//! oldest first: the dates after the last SUCCESS, and the gaps behind it (an operator's
//! out-of-order run, a failure). The start date is `FINESETTLE_SETTLE_START_DATE`, or, when that
//! is unset, the first date the job ever planned, recorded by whichever run planned it first.

use chrono::NaiveDate;
use sqlx::PgPool;

use crate::domain::{self, BeforeStart};
use crate::store;

/// Why an operator's dates cannot be planned.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error(transparent)]
    BeforeStart(#[from] BeforeStart),
    #[error(transparent)]
    Db(#[from] sqlx::Error),
}

/// The start date in force: `configured`, or the recorded one, or, on the first plan ever,
/// `first_planned`, which is recorded then, unless it lies further back than
/// [`domain::FIRST_START_MAX_DAYS`] (an operator's typo must not put the start centuries back).
pub async fn start_date(
    pool: &PgPool,
    task_name: &str,
    configured: Option<NaiveDate>,
    first_planned: NaiveDate,
) -> Result<NaiveDate, PlanError> {
    if let Some(start) = configured {
        return Ok(start);
    }
    // A read first: every fire of every replica plans, and only the first plan ever writes.
    // The upsert alone would rewrite the row (and its WAL) on each of them.
    if let Some(start) = store::start_date::recorded(pool, task_name).await? {
        return Ok(start);
    }
    // The database's UTC date: a day off the business date is nothing against ten years.
    let today = store::clock::now(pool).await?.date_naive();
    domain::check_first_start(today, first_planned)?;
    Ok(store::start_date::record_first(pool, task_name, first_planned).await?)
}

/// The dates a scheduled or start-up run settles: every date from the start date through
/// `target` without SUCCESS, oldest first, at most `max_days` (the rest wait for the next fire).
pub async fn dates_for_run(
    pool: &PgPool,
    task_name: &str,
    configured_start: Option<NaiveDate>,
    target: NaiveDate,
    max_days: u32,
) -> Result<Vec<NaiveDate>, PlanError> {
    let start = start_date(pool, task_name, configured_start, target).await?;
    Ok(unsettled_from(pool, task_name, start, target, max_days).await?)
}

/// [`dates_for_run`] with the start date already known.
pub async fn unsettled_from(
    pool: &PgPool,
    task_name: &str,
    start: NaiveDate,
    target: NaiveDate,
    max_days: u32,
) -> sqlx::Result<Vec<NaiveDate>> {
    if start > target || max_days == 0 {
        return Ok(Vec::new());
    }
    store::executions::unsettled_between(pool, task_name, start, target, i64::from(max_days)).await
}

/// The dates an operator's run of `requested` settles: those without SUCCESS, after every
/// earlier date without SUCCESS (see [`domain::manual_dates`]). Empty when every requested date is
/// settled. Refused when a requested date lies before the start date.
pub async fn dates_for_manual_run(
    pool: &PgPool,
    task_name: &str,
    configured_start: Option<NaiveDate>,
    requested: &[NaiveDate],
) -> Result<Vec<NaiveDate>, PlanError> {
    let Some(&first) = requested.iter().min() else {
        return Ok(Vec::new());
    };
    let start = start_date(pool, task_name, configured_start, first).await?;
    manual_from(pool, task_name, start, requested).await
}

/// [`dates_for_manual_run`] with the start date already known.
pub async fn manual_from(
    pool: &PgPool,
    task_name: &str,
    start: NaiveDate,
    requested: &[NaiveDate],
) -> Result<Vec<NaiveDate>, PlanError> {
    let (Some(&first), Some(&last)) = (requested.iter().min(), requested.iter().max()) else {
        return Ok(Vec::new());
    };
    domain::check_not_before_start(start, first)?;
    let unsettled = store::executions::unsettled_between(pool, task_name, start, last, i64::MAX).await?;
    Ok(domain::manual_dates(&unsettled, requested))
}

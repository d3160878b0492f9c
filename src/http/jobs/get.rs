use axum::extract::State;
use chrono::SecondsFormat;

use super::{Fire, Job, job_named};
use crate::http::error::ApiError;
use crate::http::extract::Path;
use crate::http::resource::Found;
use crate::jobs::SettleJob;
use crate::schedule::settle_target;
use crate::state::AppState;
use crate::store;

/// How many upcoming fires the job view shows.
const NEXT_FIRES: usize = 5;

/// A job: schedule, next fires, last execution, lock holder.
#[utoipa::path(
    get, path = "/{name}", tag = "jobs",
    params(("name" = String, Path, description = "Job name, e.g. settle-fines")),
    responses(Found<Job>),
)]
pub async fn get_job(State(state): State<AppState>, Path(name): Path<String>) -> Result<Found<Job>, ApiError> {
    let job = job_named(&state, &name)?;
    Ok(Found(describe(&state, job).await?))
}

pub(super) async fn describe(state: &AppState, job: &SettleJob) -> Result<Job, ApiError> {
    let pool = &state.pool;
    let now = store::clock::now(pool).await?;
    let schedule = job.schedule();
    let tz = schedule.tz();
    let next_fires = schedule
        .upcoming(now, NEXT_FIRES)
        .into_iter()
        .map(|utc| Fire {
            utc,
            business: utc.with_timezone(&tz).to_rfc3339_opts(SecondsFormat::Secs, false),
            settles: settle_target(utc, tz),
        })
        .collect();
    let last_execution = store::executions::latest(pool, job.task_name()).await?;
    let last_success_date = store::executions::last_success(pool, job.task_name()).await?;
    let locks = job.lock().list().await?;
    let lock = locks.into_iter().find(|l| &l.task_name == job.task_name());
    let settings = &state.settings.job;
    Ok(Job {
        name: job.task_name().clone(),
        cron: schedule.expr().to_owned(),
        time_zone: tz.name(),
        next_fires,
        last_success_date,
        last_execution,
        lock,
        lock_at_most_for_seconds: settings.lock_at_most_for.as_secs(),
        lock_at_least_for_seconds: settings.lock_at_least_for.as_secs(),
        backfill_max_days: settings.backfill_max_days,
    })
}

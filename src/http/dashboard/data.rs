//! Everything the dashboard shows, gathered in one place before any HTML is written.

use chrono::{DateTime, NaiveDate, Utc};
use chrono_tz::Tz;

use crate::domain::TaskName;
use crate::domain::alert::{Alert, AlertState};
use crate::lock::Lock;
use crate::reminders::{self, QueueStats};
use crate::state::AppState;
use crate::store::attempts::Attempt;
use crate::store::dashboard::FineTotal;
use crate::store::executions::Execution;
use crate::store::{self, PageRequest};

/// Executions drawn on the timeline.
const TIMELINE_EXECUTIONS: i64 = 60;
/// Attempts listed.
const RECENT_ATTEMPTS: i64 = 20;
/// Active alerts listed.
const ACTIVE_ALERTS: i64 = 20;
/// Next fires listed.
const NEXT_FIRES: usize = 5;

pub struct DashboardData {
    /// The replica that rendered the page (behind a load balancer, any of them).
    pub served_by: String,
    /// The database clock, which every time on the page is compared with.
    pub now: DateTime<Utc>,
    pub tz: Tz,
    pub job: JobSummary,
    pub lock: LockState,
    /// Newest first.
    pub executions: Vec<Execution>,
    /// Newest first.
    pub attempts: Vec<Attempt>,
    /// Newest first, at most [`ACTIVE_ALERTS`].
    pub alerts: Vec<Alert>,
    /// More active alerts exist than are listed.
    pub more_alerts: bool,
    pub queue: QueueState,
    pub fines: Vec<FineTotal>,
}

pub struct JobSummary {
    pub name: TaskName,
    pub cron: String,
    pub next_fires: Vec<DateTime<Utc>>,
    pub last_success: Option<NaiveDate>,
}

pub enum LockState {
    /// The job never took its lock.
    Never,
    Row(Lock),
    /// The lock store did not answer (logged; the page does not show why).
    Unavailable,
}

pub enum QueueState {
    /// No `REDIS_URL`: reminders are off.
    NotConfigured,
    Unavailable,
    Stats(QueueStats),
}

/// Reads everything; a database error fails the whole page, a lock store or Redis error only
/// its section.
pub async fn gather(state: &AppState) -> sqlx::Result<DashboardData> {
    let pool = &state.pool;
    let job = &state.job;
    let task = job.task_name();
    let now = store::clock::now(pool).await?;
    let first = |limit| PageRequest { after: 0, limit };

    let executions = store::executions::list(pool, task, first(TIMELINE_EXECUTIONS)).await?;
    let attempts = store::attempts::list(pool, task, first(RECENT_ATTEMPTS)).await?;
    let mut alerts = store::alerts::list(pool, Some(AlertState::Active), first(ACTIVE_ALERTS)).await?;
    let more_alerts = alerts.len() as i64 > ACTIVE_ALERTS;
    alerts.truncate(ACTIVE_ALERTS as usize);
    let fines = store::dashboard::fine_totals(pool).await?;
    let job_summary = JobSummary {
        name: task.clone(),
        cron: job.schedule().expr().to_owned(),
        next_fires: job.schedule().upcoming(now, NEXT_FIRES),
        last_success: store::executions::last_success(pool, task).await?,
    };

    let lock = match job.lock().list().await {
        Ok(locks) => locks
            .into_iter()
            .find(|l| &l.task_name == task)
            .map_or(LockState::Never, LockState::Row),
        Err(error) => {
            tracing::warn!(%error, "dashboard: the lock store did not answer");
            LockState::Unavailable
        }
    };
    let queue = match &state.redis {
        None => QueueState::NotConfigured,
        Some(redis) => match reminders::queue_stats(redis).await {
            Ok(stats) => QueueState::Stats(stats),
            Err(error) => {
                tracing::warn!(%error, "dashboard: the reminder queue did not answer");
                QueueState::Unavailable
            }
        },
    };

    Ok(DashboardData {
        served_by: state.settings.instance_id.clone(),
        now,
        tz: job.business_tz(),
        job: job_summary,
        lock,
        executions,
        attempts,
        alerts,
        more_alerts,
        queue,
        fines,
    })
}

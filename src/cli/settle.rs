//! `finesettle settle` and `finesettle backfill`: the job's procedure from a terminal, through
//! the same lock, fencing and execution records as the scheduled fires (trigger `manual`).

use std::time::Duration;

use chrono::NaiveDate;
use indicatif::{ProgressBar, ProgressStyle};
use tokio_util::sync::CancellationToken;

use crate::clock::{Clock, DatabaseTime};
use crate::config::Settings;
use crate::domain::RangeError;
use crate::jobs::{Refused, Request, SettleJob};
use crate::lock::JobLock;
use crate::settlement::{DateStatus, Trigger};
use crate::store;

/// Settles `from..=to` with a progress bar. Fails when the lock is held elsewhere, a date
/// failed, or the lease was lost.
pub async fn settle_range(settings: Settings, from: NaiveDate, to: NaiveDate) -> anyhow::Result<()> {
    let pool = store::database::connect_in(&settings.database_url, &settings.db_schema, 4).await?;
    store::database::migrate(&pool).await?;
    let redis = settings.redis_url.as_deref().map(store::redis::pool).transpose()?;
    let job = SettleJob::new(
        pool.clone(),
        JobLock::from_settings(pool.clone(), redis, &settings)?,
        DatabaseTime::new(Clock::system(), pool.clone()),
        &settings,
        crate::startup::job_hooks(&pool, &settings),
    )?;
    // From here on Ctrl-C and SIGTERM stop the run as they stop `serve`: the running date
    // finishes within FINESETTLE_SHUTDOWN_GRACE or is abandoned, and the lock is released.
    let interrupted = on_interrupt(job.clone(), settings.shutdown_grace)?;
    let now = store::clock::now(&pool).await?;
    let started = match job.start(Trigger::Manual, now, Request::Range { from, to }).await {
        Ok(started) => started,
        Err(Refused::NothingToDo) => {
            println!("every date from {from} to {to} is already settled");
            return Ok(());
        }
        Err(Refused::Invalid(error)) => anyhow::bail!("{}", range_error(error, settings.business_tz)),
        Err(refused) => anyhow::bail!("not started: {refused}"),
    };
    let bar = ProgressBar::new(started.dates.len() as u64).with_style(
        ProgressStyle::with_template("settling [{bar:30}] {pos}/{len} dates, {elapsed}")?.progress_chars("=> "),
    );
    let mut progress = started.progress.clone();
    let follow = {
        let bar = bar.clone();
        tokio::spawn(async move {
            while progress.changed().await.is_ok() {
                bar.set_position(*progress.borrow() as u64);
            }
        })
    };
    let report = started.wait().await;
    let _ = follow.await;
    bar.finish_and_clear();
    for outcome in &report.walk.outcomes {
        let error = outcome.error.as_deref().map(|e| format!(": {e}")).unwrap_or_default();
        println!(
            "{} {:<15} rows={:<8} {} ms{error}",
            outcome.date,
            outcome.status.as_str(),
            outcome.rows,
            outcome.duration.as_millis()
        );
    }
    anyhow::ensure!(!report.lost_lease, "the lease was lost; another replica took over");
    anyhow::ensure!(
        !interrupted.is_cancelled() || report.walk.completed(),
        "interrupted before every date was settled; run the command again to settle the rest"
    );
    anyhow::ensure!(
        report
            .walk
            .outcomes
            .iter()
            .all(|o| matches!(o.status, DateStatus::Success | DateStatus::AlreadySettled))
            && report.walk.not_run.is_empty(),
        "some dates did not settle; see above"
    );
    Ok(())
}

/// The planner's refusal of a range, in the command's own words.
fn range_error(error: RangeError, tz: chrono_tz::Tz) -> String {
    match error {
        RangeError::Reversed { from, to } => format!("--from {from} is after --to {to}"),
        RangeError::TooLong { days, max } => {
            format!("{days} dates is more than FINESETTLE_BACKFILL_MAX_DAYS ({max}); split the range")
        }
        RangeError::NotEnded { to, today } => format!("--to {to} has not ended yet in {tz} (today is {today})"),
    }
}

/// Listens for Ctrl-C and SIGTERM (registered before this returns, so none is missed once the run
/// starts); on either, shuts the job down with `grace`. The token answered is cancelled then.
fn on_interrupt(job: SettleJob, grace: Duration) -> anyhow::Result<CancellationToken> {
    let interrupted = CancellationToken::new();
    let signalled = interrupted.clone();
    let signal = interrupt_signal()?;
    tokio::spawn(async move {
        signal.await;
        eprintln!("interrupted: finishing the current date (at most {grace:?}), then releasing the lock");
        tracing::info!(
            grace_ms = grace.as_millis() as u64,
            "interrupted; shutting the run down"
        );
        signalled.cancel();
        job.shutdown(grace).await;
    });
    Ok(interrupted)
}

/// Completes on SIGINT or SIGTERM. The handlers are installed at once, replacing the default
/// ones (which would kill the process with its lock held).
#[cfg(unix)]
fn interrupt_signal() -> anyhow::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    Ok(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
    })
}

#[cfg(not(unix))]
fn interrupt_signal() -> anyhow::Result<impl std::future::Future<Output = ()>> {
    Ok(async {
        let _ = tokio::signal::ctrl_c().await;
    })
}

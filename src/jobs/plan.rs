//! The one planner: which business dates a fire settles (CONTRACT §2.3), whatever triggered it.
//!
//! A trigger asks with a [`Request`]: the cron, the catch-up at start and a held fire's retry ask
//! to catch up through a target date; an operator (the API, the CLI) asks for a range of dates.
//! The planner answers with a [`Plan`], or says why it cannot ([`PlanError`]); the HTTP handlers
//! and the CLI only translate its answers. The rules themselves are pure and live in
//! [`crate::domain::backfill`]: an operator's range must have ended, be in order and fit
//! `FINESETTLE_BACKFILL_MAX_DAYS` ([`domain::manual_range`]); no date before the start date
//! ([`domain::check_not_before_start`]); a gap before the asked dates is settled first
//! ([`domain::manual_dates`]).
//!
//! Every plan settles the dates from the start date that have no SUCCESS, oldest first: the
//! dates after the last SUCCESS, and the gaps behind it (an operator's out-of-order run, a
//! failure). The start date is `FINESETTLE_SETTLE_START_DATE`, or, when that is unset, the first
//! date the job ever planned, recorded by whichever fire planned it first.
//!
//! Only dates that have ended by the database's clock are planned, whatever the trigger: a
//! replica whose clock runs ahead may fire for a slot whose date is still in progress. The
//! execution record checks again, in the date's fenced transaction
//! ([`crate::settlement::records`]).

use chrono::NaiveDate;
use chrono_tz::Tz;
use sqlx::PgPool;

use crate::domain::{self, BeforeStart, RangeError, TaskName};
use crate::store;

/// What a trigger asks a fire to settle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// Every date without SUCCESS from the start date through `target`, at most
    /// `FINESETTLE_BACKFILL_MAX_DAYS` of them (the rest wait for the next fire), and the loans
    /// recorded or changed since their last accrual (cron, start-up, a held fire's retry).
    CatchUp { target: NaiveDate },
    /// An operator's dates `from..=to` (one date: `from == to`), skipping those already settled,
    /// after every earlier date without SUCCESS (the API's runs and backfills, the CLI).
    Range { from: NaiveDate, to: NaiveDate },
}

impl Request {
    /// One date, as `POST /jobs/{name}/runs` asks for it.
    pub fn date(date: NaiveDate) -> Self {
        Request::Range { from: date, to: date }
    }
}

/// What a fire settles: the planner's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The start date in force: no month before its month is ever accrued.
    pub start_date: NaiveDate,
    /// The dates to settle, oldest first.
    pub dates: Vec<NaiveDate>,
    /// Loans recorded or changed since their last accrual wait (an import after the last run).
    pub changes_pending: bool,
    /// Why asked-for dates were left out: they have not ended by the database's clock.
    pub not_ended: Option<String>,
}

impl Plan {
    /// Nothing to settle and no changed loan to accrue.
    pub fn is_empty(&self) -> bool {
        self.dates.is_empty() && !self.changes_pending
    }

    /// The attempt timeline's detail for a fire that won the lock.
    pub fn describe(&self) -> String {
        let work = match (self.dates.first(), self.dates.last()) {
            (Some(first), Some(last)) => format!("settling {} date(s) from {first} to {last}", self.dates.len()),
            _ => "accruing loans recorded or changed since the last run".to_owned(),
        };
        match &self.not_ended {
            Some(not_ended) => format!("{work}; {not_ended}"),
            None => work,
        }
    }
}

/// Why a request cannot be planned.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// An operator's range breaks a rule that needs no look at the records.
    #[error(transparent)]
    Range(#[from] RangeError),
    /// An operator asked for a date before the job's start date.
    #[error(transparent)]
    BeforeStart(#[from] BeforeStart),
    #[error(transparent)]
    Db(#[from] sqlx::Error),
}

/// The planner of one task. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Planner {
    pub pool: PgPool,
    pub task_name: TaskName,
    /// The business zone: "today", and so which dates have ended, is the database's clock there.
    pub business_tz: Tz,
    /// `FINESETTLE_SETTLE_START_DATE`.
    pub configured_start: Option<NaiveDate>,
    /// `FINESETTLE_BACKFILL_MAX_DAYS`: the most dates one fire settles.
    pub max_days: u32,
}

impl Planner {
    /// Checks an operator's range against the rules that need no look at the records (it has
    /// ended by the database's clock, it is in order, it fits the cap), so that a bad request is
    /// answered before the fire takes anything. A catch-up needs no check.
    pub async fn check(&self, request: &Request) -> Result<(), PlanError> {
        if let Request::Range { from, to } = request {
            let today = store::clock::business_today(&self.pool, self.business_tz).await?;
            domain::manual_range(*from, *to, today, self.max_days)?;
        }
        Ok(())
    }

    /// The plan for `request` by the records as they are now. Records the start date on the
    /// first plan ever (see [`start_date`]).
    pub async fn plan(&self, request: &Request) -> Result<Plan, PlanError> {
        let today = store::clock::business_today(&self.pool, self.business_tz).await?;
        let not_ended = |date: NaiveDate| {
            format!(
                "{date} has not ended by the database's clock (today is {today} in {}); it is settled once it has",
                self.business_tz
            )
        };
        match *request {
            Request::CatchUp { target } => {
                let ended = today.pred_opt().unwrap_or(today).min(target);
                let start_date = self.start_date(ended).await?;
                let dates = unsettled_from(&self.pool, &self.task_name, start_date, ended, self.max_days).await?;
                Ok(Plan {
                    start_date,
                    dates,
                    changes_pending: store::loans::changes_pending(&self.pool).await?,
                    not_ended: (target >= today).then(|| not_ended(target)),
                })
            }
            Request::Range { from, to } => {
                // The range's rules were checked before the fire took anything
                // ([`Planner::check`]); "today" may have moved on since, never back. The dates
                // that have ended are settled, the rest named.
                let requested: Vec<NaiveDate> = from.iter_days().take_while(|d| *d <= to && *d < today).collect();
                let start_date = self.start_date(from).await?;
                let dates = match requested.last() {
                    Some(&last) => {
                        domain::check_not_before_start(start_date, from)?;
                        let unsettled = store::executions::unsettled_between(
                            &self.pool,
                            &self.task_name,
                            start_date,
                            last,
                            i64::MAX,
                        )
                        .await?;
                        domain::manual_dates(&unsettled, &requested)
                    }
                    None => Vec::new(),
                };
                Ok(Plan {
                    start_date,
                    dates,
                    changes_pending: false,
                    not_ended: (to >= today).then(|| not_ended(today.max(from))),
                })
            }
        }
    }

    /// The start date in force: the configured one, or the recorded one, or, on the first plan
    /// ever, `first_planned`, which is recorded then, unless it lies further back than
    /// [`domain::FIRST_START_MAX_DAYS`] (an operator's typo must not put the start centuries
    /// back).
    pub async fn start_date(&self, first_planned: NaiveDate) -> Result<NaiveDate, PlanError> {
        if let Some(start) = self.configured_start {
            return Ok(start);
        }
        // A read first: every fire of every replica plans, and only the first plan ever writes.
        // The upsert alone would rewrite the row (and its WAL) on each of them.
        if let Some(start) = store::start_date::recorded(&self.pool, &self.task_name).await? {
            return Ok(start);
        }
        // The database's UTC date: a day off the business date is nothing against ten years.
        let today = store::clock::now(&self.pool).await?.date_naive();
        domain::check_first_start(today, first_planned)?;
        Ok(store::start_date::record_first(&self.pool, &self.task_name, first_planned).await?)
    }
}

/// Every date from `start` through `target` without SUCCESS, oldest first, at most `max_days`.
pub async fn unsettled_from(
    pool: &PgPool,
    task_name: &TaskName,
    start: NaiveDate,
    target: NaiveDate,
    max_days: u32,
) -> sqlx::Result<Vec<NaiveDate>> {
    if start > target || max_days == 0 {
        return Ok(Vec::new());
    }
    store::executions::unsettled_between(pool, task_name, start, target, i64::from(max_days)).await
}

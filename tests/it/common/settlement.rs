//! A fresh database per test, the run context, runners, and what the database holds.

use chrono::NaiveDate;
use finesettle::domain::{FencingToken, TaskName};
use finesettle::jobs::{PlanError, Planner, Request};
use finesettle::settlement::{self, DateStatus, RunContext, Trigger, WalkReport};
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;

use crate::common::data::{insert_loans, random_loans, ymd};
use crate::common::database::TestDatabase;
use crate::common::oracle::{Entry, Fine, Model};
use crate::common::seed::migrated_db_with;

pub const TASK: TaskName = TaskName::from_static("settle-fines");
/// The token the tests' lock row starts with.
pub const TOKEN: i64 = 7;
/// Small, so that every date takes several batches in both steps.
pub const BATCH: i64 = 16;

/// A migrated database of its own, whose `settle-fines` lock is held with [`TOKEN`].
pub struct Db {
    pub pool: PgPool,
    // Dropped last: drops the database.
    _database: TestDatabase,
}

impl Db {
    /// The database's URL, for connections of a test's own.
    pub fn url(&self) -> String {
        self._database.url().to_owned()
    }
}

pub async fn fresh_db() -> Db {
    let (database, pool) = migrated_db_with(8).await;
    sqlx::query(
        "insert into task_lock (task_name, locked_until, locked_at, locked_by, owner_token, fencing_token) \
         values ($1, now() + interval '1 hour', now(), 'test', gen_random_uuid(), $2)",
    )
    .bind(TASK)
    .bind(TOKEN)
    .execute(&pool)
    .await
    .unwrap();
    Db {
        pool,
        _database: database,
    }
}

/// A [`fresh_db`] holding `count` [`random_loans`] drawn from `seed`.
pub async fn fresh_db_with_loans(seed: u64, count: usize) -> Db {
    let db = fresh_db().await;
    insert_loans(&db.pool, &random_loans(seed, count)).await;
    db
}

/// The start date of the runs of these tests: no month before January 2026 is accrued.
pub fn start() -> NaiveDate {
    ymd(2026, 1, 1)
}

/// A run holding `token`, with the job started on [`start`].
pub fn ctx(token: i64) -> RunContext {
    RunContext {
        task_name: TASK,
        fencing_token: FencingToken(token),
        instance_id: "test-replica".to_owned(),
        trigger: Trigger::Manual,
        start_date: start(),
        business_tz: chrono_tz::Asia::Shanghai,
        batch_size: BATCH,
        statement_limits: Default::default(),
    }
}

/// The job's planner for [`TASK`], started on `configured_start` (unset: the recorded start
/// date), settling at most `max_days` dates a fire.
pub fn planner(pool: &PgPool, configured_start: Option<NaiveDate>, max_days: u32) -> Planner {
    Planner {
        pool: pool.clone(),
        task_name: TASK,
        business_tz: chrono_tz::Asia::Shanghai,
        configured_start,
        max_days,
    }
}

/// The dates a scheduled fire through `target` settles.
pub async fn dates_for_run(
    pool: &PgPool,
    configured_start: Option<NaiveDate>,
    target: NaiveDate,
    max_days: u32,
) -> Result<Vec<NaiveDate>, PlanError> {
    let plan = planner(pool, configured_start, max_days)
        .plan(&Request::CatchUp { target })
        .await?;
    Ok(plan.dates)
}

/// The dates an operator's run of `requested` (one date, or a range in order) settles.
pub async fn dates_for_manual_run(
    pool: &PgPool,
    configured_start: Option<NaiveDate>,
    requested: &[NaiveDate],
) -> Result<Vec<NaiveDate>, PlanError> {
    let (Some(&from), Some(&to)) = (requested.first(), requested.last()) else {
        return Ok(Vec::new());
    };
    let plan = planner(pool, configured_start, 3660)
        .plan(&Request::Range { from, to })
        .await?;
    Ok(plan.dates)
}

/// The walk over `dates` with [`TOKEN`], never stopped.
pub async fn walk(pool: &PgPool, dates: &[NaiveDate]) -> WalkReport {
    let never = CancellationToken::new();
    settlement::settle_dates(pool, &ctx(TOKEN), dates, &never, &never, ()).await
}

/// The walk over `dates`, asserting every date succeeded.
#[track_caller]
pub fn assert_all_succeeded(report: &WalkReport) {
    for o in &report.outcomes {
        assert_eq!(o.status, DateStatus::Success, "{}: {:?}", o.date, o.error);
    }
    assert!(report.not_run.is_empty(), "not run: {:?}", report.not_run);
}

/// The per-date procedure alone (no execution record): how a rerun of a settled date is done.
pub async fn rerun(pool: &PgPool, date: NaiveDate) -> settlement::DateCounts {
    let never = CancellationToken::new();
    let mut tx = pool.begin().await.unwrap();
    let counts = settlement::settle_date(&mut tx, &ctx(TOKEN), date, &never)
        .await
        .expect("rerun succeeds");
    tx.commit().await.unwrap();
    counts
}

/// Fines by business key, sorted.
pub async fn fines(pool: &PgPool) -> Vec<Fine> {
    let rows: Vec<(i64, NaiveDate, i32, i64, NaiveDate, String)> = sqlx::query_as(
        "select loan_id, settle_month, overdue_days, amount_cents, accrued_through, status from fine_record \
         order by loan_id, settle_month",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    rows.into_iter()
        .map(
            |(loan_id, settle_month, overdue_days, amount_cents, accrued_through, status)| Fine {
                loan_id,
                settle_month,
                overdue_days,
                amount_cents,
                accrued_through,
                status: match status.as_str() {
                    "PENDING" => "PENDING",
                    "SETTLED" => "SETTLED",
                    "VOID" => "VOID",
                    other => panic!("unknown status {other}"),
                },
            },
        )
        .collect()
}

/// Ledger entries by their fine's business key, sorted. Also checks that each entry belongs to
/// its fine's member.
pub async fn ledger(pool: &PgPool) -> Vec<Entry> {
    let rows: Vec<(i64, NaiveDate, String, i64, bool)> = sqlx::query_as(
        "select f.loan_id, f.settle_month, e.kind, e.amount_cents, e.member_id = f.member_id \
         from ledger_entry e join fine_record f on f.id = e.fine_id",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    let mut entries: Vec<Entry> = rows
        .into_iter()
        .map(|(loan_id, settle_month, kind, amount_cents, same_member)| {
            assert!(
                same_member,
                "entry of loan {loan_id} {settle_month} charged to another member"
            );
            Entry {
                loan_id,
                settle_month,
                kind: if kind == "CHARGE" {
                    "CHARGE"
                } else {
                    panic!("unexpected {kind} entry")
                },
                amount_cents,
            }
        })
        .collect();
    entries.sort();
    entries
}

/// Asserts that the database holds exactly the model's fines and ledger.
#[track_caller]
pub fn assert_matches(model: &Model, fines: &[Fine], ledger: &[Entry]) {
    let expected = model.fines();
    let missing: Vec<_> = expected.iter().filter(|f| !fines.contains(f)).collect();
    let unexpected: Vec<_> = fines.iter().filter(|f| !expected.contains(f)).collect();
    assert!(
        missing.is_empty() && unexpected.is_empty(),
        "fines differ from the oracle\n  expected but not found: {missing:#?}\n  found but not expected: {unexpected:#?}"
    );
    assert_eq!(ledger, model.ledger().as_slice(), "ledger differs from the oracle");
}

/// Every fine and ledger row with its row version (`xmin`): any write, even of the same values,
/// changes it.
pub async fn row_versions(pool: &PgPool) -> (String, String) {
    sqlx::query_as(
        "select (select coalesce(string_agg(concat_ws('|', xmin, f.*), E'\\n' order by id), '') from fine_record f), \
                (select coalesce(string_agg(concat_ws('|', xmin, e.*), E'\\n' order by id), '') from ledger_entry e)",
    )
    .fetch_one(pool)
    .await
    .unwrap()
}

/// Executions of `date`: (status, affected_rows, error, fencing_token), oldest first.
pub async fn executions_of(pool: &PgPool, date: NaiveDate) -> Vec<(String, i64, Option<String>, i64)> {
    sqlx::query_as(
        "select status, affected_rows, error, fencing_token from task_execution \
         where task_name = $1 and business_date = $2 order by id",
    )
    .bind(TASK)
    .bind(date)
    .fetch_all(pool)
    .await
    .unwrap()
}

/// Forgets every fine, ledger entry and execution (the loans stay).
pub async fn reset_settlement(pool: &PgPool) {
    // Not truncate: other tables (alerts) reference executions; there are none in these tests.
    // Every loan is queued again, as when it was recorded: the settlement never saw it.
    sqlx::raw_sql(
        "delete from ledger_entry; delete from fine_record; delete from task_execution; \
         delete from loan_change; insert into loan_change (loan_id) select id from loan",
    )
    .execute(pool)
    .await
    .unwrap();
}

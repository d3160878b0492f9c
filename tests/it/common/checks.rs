//! What every duplicate-run test asserts at the end, and bounded waits on observed state.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::NaiveDate;
use finesettle::domain::LoanTerms;
use sqlx::PgPool;

use crate::common::oracle::Model;
use crate::common::settlement::{TASK, assert_matches, fines, ledger};

/// How often the waits look again.
const POLL: Duration = Duration::from_millis(25);

/// Exactly one SUCCESS for each of `dates` and for no other date, no CHARGE posted twice, and
/// fines and ledger equal to the oracle after running `dates` in order over `loans`.
pub async fn assert_settled_exactly_once(pool: &PgPool, loans: &[(i64, LoanTerms)], dates: &[NaiveDate]) {
    let successes = successes_by_date(pool).await;
    let expected: BTreeMap<NaiveDate, i64> = dates.iter().map(|d| (*d, 1)).collect();
    assert_eq!(successes, expected, "SUCCESS executions per business date");
    assert_no_charge_twice(pool).await;
    assert_matches_oracle(pool, loans, dates).await;
}

/// SUCCESS executions per business date.
pub async fn successes_by_date(pool: &PgPool) -> BTreeMap<NaiveDate, i64> {
    let rows: Vec<(NaiveDate, i64)> = sqlx::query_as(
        "select business_date, count(*) from task_execution \
         where task_name = $1 and status = 'SUCCESS' group by business_date",
    )
    .bind(TASK)
    .fetch_all(pool)
    .await
    .unwrap();
    rows.into_iter().collect()
}

/// No fine has two ledger entries of one kind (the unique index says so; this checks the data).
pub async fn assert_no_charge_twice(pool: &PgPool) {
    let twice: Vec<(i64, String, i64)> = sqlx::query_as(
        "select fine_id, kind, count(*) from ledger_entry where fine_id is not null \
         group by fine_id, kind having count(*) > 1",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    assert!(twice.is_empty(), "fines with an entry posted more than once: {twice:?}");
}

/// Fines and ledger equal the oracle's after running `dates` in order over `loans`.
pub async fn assert_matches_oracle(pool: &PgPool, loans: &[(i64, LoanTerms)], dates: &[NaiveDate]) {
    // The job's start date: recorded by its first plan, or the first date run.
    let start = finesettle::store::start_date::recorded(pool, &TASK)
        .await
        .unwrap()
        .or_else(|| dates.iter().min().copied())
        .expect("dates to check");
    let model = Model::after(start, loans, dates);
    assert!(!model.ledger().is_empty(), "the data gives the dates nothing to charge");
    assert_matches(&model, &fines(pool).await, &ledger(pool).await);
}

/// Every settlement row that carries `token`, with its row version (`xmin`, changed by any
/// write, even of the same values): fines, ledger entries, executions.
pub async fn written_with(pool: &PgPool, token: i64) -> Vec<String> {
    sqlx::query_scalar(
        r#"
        select concat_ws('|', 'fine', xmin, f.*) from fine_record f where fencing_token = $1
        union all
        select concat_ws('|', 'entry', xmin, e.*) from ledger_entry e where fencing_token = $1
        union all
        select concat_ws('|', 'execution', xmin, x.*) from task_execution x where fencing_token = $1
        order by 1
        "#,
    )
    .bind(token)
    .fetch_all(pool)
    .await
    .unwrap()
}

/// An execution as these tests read it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Execution {
    pub id: i64,
    pub business_date: NaiveDate,
    pub trigger: String,
    pub instance_id: String,
    pub fencing_token: i64,
    pub status: String,
    pub error: Option<String>,
}

/// Every execution, oldest first.
pub async fn executions(pool: &PgPool) -> Vec<Execution> {
    try_executions(pool).await.unwrap()
}

/// [`executions`], or the error: for a test that reads while the database fails over.
pub async fn try_executions(pool: &PgPool) -> Result<Vec<Execution>, sqlx::Error> {
    sqlx::query_as(
        "select id, business_date, trigger, instance_id, fencing_token, status, error \
         from task_execution where task_name = $1 order by id",
    )
    .bind(TASK)
    .fetch_all(pool)
    .await
}

/// An attempt as these tests read it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Attempt {
    pub trigger: String,
    pub instance_id: String,
    pub fired_at: chrono::DateTime<chrono::Utc>,
    pub outcome: String,
    pub fencing_token: Option<i64>,
    pub holder: Option<String>,
}

/// Every attempt, oldest first.
pub async fn attempts(pool: &PgPool) -> Vec<Attempt> {
    sqlx::query_as(
        "select trigger, instance_id, fired_at, outcome, fencing_token, holder \
         from task_attempt where task_name = $1 order by id",
    )
    .bind(TASK)
    .fetch_all(pool)
    .await
    .unwrap()
}

/// The job's attempts, oldest first, each as `pick` makes it (the columns a test compares).
pub async fn attempts_as<T>(pool: &PgPool, pick: impl FnMut(Attempt) -> T) -> Vec<T> {
    attempts(pool).await.into_iter().map(pick).collect()
}

/// The job's lock row: (locked_by, fencing_token, whether locked_until has passed by the
/// database clock).
pub async fn lock_row(pool: &PgPool) -> Option<(String, i64, bool)> {
    sqlx::query_as("select locked_by, fencing_token, locked_until < now() from task_lock where task_name = $1")
        .bind(TASK)
        .fetch_optional(pool)
        .await
        .unwrap()
}

/// Whether the lock row is past `locked_until` by the database clock (or absent).
pub async fn lock_expired(pool: &PgPool) -> bool {
    lock_row(pool).await.is_none_or(|(_, _, expired)| expired)
}

/// Calls `done` until it holds, for at most `within`; panics naming `what` after that.
pub async fn eventually(what: &str, within: Duration, mut done: impl AsyncFnMut() -> bool) {
    poll_until(what, within, async || done().await.then_some(())).await
}

/// Calls `probe` until it answers `Some`, for at most `within`; panics naming `what` after that.
pub async fn poll_until<T>(what: &str, within: Duration, mut probe: impl AsyncFnMut() -> Option<T>) -> T {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        if let Some(value) = probe().await {
            return value;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "gave up after {within:?} waiting for {what}"
        );
        tokio::time::sleep(POLL).await;
    }
}

/// The last date settled, once every date through `yesterday` is and nothing is RUNNING: a walk
/// caught up.
pub fn caught_up_through(all: &[Execution], yesterday: NaiveDate) -> Option<NaiveDate> {
    let last = all
        .iter()
        .filter(|e| e.status == "SUCCESS")
        .map(|e| e.business_date)
        .max()?;
    (last >= yesterday && all.iter().all(|e| e.status != "RUNNING")).then_some(last)
}

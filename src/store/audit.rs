//! The facts the audit judges (`crate::domain::audit`): every loan that may owe a fine for a
//! month or has one, with that fine and its ledger entries, and how far the job has settled.
//!
//! Nothing here decides what is right: the recomputation of the fine and every comparison are in
//! the domain, so that the audit does not share a line of SQL with the settlement it checks.

use chrono::{DateTime, NaiveDate, Utc};
use futures_util::stream::BoxStream;
use sqlx::PgConnection;

use crate::domain::TaskName;

/// The first and the latest business date with a SUCCESS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SettledSpan {
    pub first: Option<NaiveDate>,
    pub last: Option<NaiveDate>,
}

pub async fn settled_span(executor: impl sqlx::PgExecutor<'_>, task_name: &TaskName) -> sqlx::Result<SettledSpan> {
    // min and max each read one end of task_execution_one_success
    let row = sqlx::query!(
        r#"
        select min(business_date) as first, max(business_date) as last
        from task_execution
        where task_name = $1 and status = 'SUCCESS'
        "#,
        task_name.as_str()
    )
    .fetch_one(executor)
    .await?;
    Ok(SettledSpan {
        first: row.first,
        last: row.last,
    })
}

/// One loan as the audit sees it: its terms, whether it waits in the `loan_change` queue, and
/// its fine for the month (all `None` without one) with the fine's CHARGE and REVERSAL.
#[derive(Debug, Clone)]
pub struct FactRow {
    pub loan_id: crate::domain::LoanId,
    pub borrowed_on: NaiveDate,
    pub due_on: NaiveDate,
    pub returned_on: Option<NaiveDate>,
    pub daily_fine_cents: i64,
    pub updated_at: DateTime<Utc>,
    pub queued: bool,
    pub fine_id: Option<i64>,
    pub fine_status: Option<String>,
    pub overdue_days: Option<i32>,
    pub amount_cents: Option<i64>,
    pub settled_at: Option<DateTime<Utc>>,
    pub voided_at: Option<DateTime<Utc>>,
    pub void_reason: Option<String>,
    pub charge_cents: Option<i64>,
    pub reversal_cents: Option<i64>,
}

/// Every loan that may have an overdue day in the month `first_day..=last_day` or has a fine for
/// it, streamed: a million loans pass through in bounded memory.
///
/// Every fine has its loan (a foreign key), so the loans with their fine of the month
/// left-joined are the full outer join of "expected" and "stored". The filter on the loan is a
/// superset of the loans with an overdue day in the month (due before its last day; open, or
/// returned in it after the due date): the domain recomputes the exact fine. One statement, so
/// each table is read once (hash joins) rather than once per batch; in no particular order.
pub fn facts(
    conn: &mut PgConnection,
    first_day: NaiveDate,
    last_day: NaiveDate,
) -> BoxStream<'_, sqlx::Result<FactRow>> {
    sqlx::query_as!(
        FactRow,
        r#"
        select l.id as loan_id, l.borrowed_on, l.due_on, l.returned_on, l.daily_fine_cents, l.updated_at,
               -- recorded or changed and not accrued yet: the next run brings its fines up to date
               exists (select 1 from loan_change q where q.loan_id = l.id) as "queued!",
               f.id as "fine_id?", f.status as "fine_status?", f.overdue_days as "overdue_days?",
               f.amount_cents as "amount_cents?", f.settled_at as "settled_at?", f.voided_at as "voided_at?",
               f.void_reason as "void_reason?",
               c.amount_cents as "charge_cents?", r.amount_cents as "reversal_cents?"
        from loan l
        left join fine_record f on f.loan_id = l.id and f.settle_month = $1
        -- at most one of each per fine (ledger_entry_fine_kind_key)
        left join ledger_entry c on c.fine_id = f.id and c.kind = 'CHARGE'
        left join ledger_entry r on r.fine_id = f.id and r.kind = 'REVERSAL'
        where (l.due_on < $2
               and (l.returned_on is null or (l.returned_on >= $1 and l.returned_on > l.due_on)))
           or f.id is not null
        "#,
        first_day,
        last_day
    )
    .fetch(conn)
}

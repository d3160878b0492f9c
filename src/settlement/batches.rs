//! The keyset walk both accrual steps share: batches from key 0, each after the previous batch's
//! last key, until one comes back short; a stop request is noticed between batches.

use chrono::NaiveDate;
use sqlx::PgConnection;
use tokio_util::sync::CancellationToken;

use super::{RunContext, SettleError};

/// The `insert ... on conflict` both accrual steps make of the fines of the rows `from` gives
/// (each with the loan's `id`, `member_id` and `daily_fine_cents` and the `first_day` and
/// `last_day` it counts), for the month whose first day `settle_month` names; `$5` is the
/// fencing token. One formula, overdue days × the daily fine, and one set of guards: a fine is
/// only ever moved forward while PENDING, never a SETTLED or VOID one and never backwards (a
/// rerun or an earlier date is a no-op). Answers `1` per fine written.
///
/// A macro, not a function: it writes part of a `const` statement (`concat!`).
macro_rules! upsert_fines {
    (settle_month: $month:literal, from: $from:literal) => {
        concat!(
            r#"
        insert into fine_record
            (loan_id, member_id, settle_month, overdue_days, amount_cents, accrued_through, fencing_token)
        select id, member_id, "#,
            $month,
            r#", last_day - first_day + 1,
               (last_day - first_day + 1) * daily_fine_cents, last_day, $5
        "#,
            $from,
            r#"
        on conflict (loan_id, settle_month) do update
        set overdue_days = excluded.overdue_days,
            amount_cents = excluded.amount_cents,
            accrued_through = excluded.accrued_through,
            fencing_token = excluded.fencing_token,
            -- stamped here, so the row trigger need not run (migration 20261205000210)
            updated_at = now()
        -- never a SETTLED or VOID fine, never backwards (a rerun or an earlier date: no-op)
        where fine_record.status = 'PENDING'
          and fine_record.accrued_through < excluded.accrued_through
        returning 1
"#
        )
    };
}
pub(super) use upsert_fines;

/// What one batch statement answers.
#[derive(Debug, sqlx::FromRow)]
struct Batch {
    /// The highest key of the batch: the next batch starts after it.
    last_id: Option<i64>,
    /// Rows the batch looked at; fewer than the batch size means it was the last one.
    scanned: i64,
    /// Fines inserted or moved forward.
    written: i64,
}

/// Runs one batch statement over and over, each time after the previous batch's last key, from
/// key 0 until a batch comes back short, and returns the fines written in all. A stop request is
/// noticed between batches ([`SettleError::Abandoned`]).
///
/// Every batch statement of the walk takes the same parameters: $1 the key to start after, $2 the
/// batch size, $3 a date (the business date, or the as-of date), $4 a month's first day, $5 the
/// fencing token. It is sent unnamed, so planned with this batch's values (see "Plans" in the
/// module docs of `settlement`).
pub(super) async fn walk_batches(
    conn: &mut PgConnection,
    step: &'static str,
    statement: &'static str,
    ctx: &RunContext,
    (date, month): (NaiveDate, NaiveDate),
    abort: &CancellationToken,
) -> Result<i64, SettleError> {
    let mut after = Some(0_i64);
    let mut written = 0;
    while let Some(after_key) = after {
        if abort.is_cancelled() {
            return Err(SettleError::Abandoned);
        }
        let batch: Batch = sqlx::query_as(statement)
            .bind(after_key)
            .bind(ctx.batch_size)
            .bind(date)
            .bind(month)
            .bind(ctx.fencing_token)
            .persistent(false)
            .fetch_one(&mut *conn)
            .await?;
        written += batch.written;
        // The business date is on the enclosing `job.date` span.
        tracing::debug!(
            job.step = step,
            job.scanned = batch.scanned,
            job.rows = batch.written,
            "batch"
        );
        after = batch.last_id.filter(|_| batch.scanned == ctx.batch_size);
    }
    Ok(written)
}

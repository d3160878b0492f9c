//! The keyset walk both accrual steps share: batches from key 0, each after the previous batch's
//! last key, until one comes back short; a stop request is noticed between batches.

use chrono::NaiveDate;
use sqlx::PgConnection;
use tokio_util::sync::CancellationToken;

use super::{RunContext, SettleError};

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

//! The keyset walk both accrual steps share: batches from key 0, each after the previous batch's
//! last key, until one comes back short; a stop request is noticed between batches.

use tokio_util::sync::CancellationToken;

use super::SettleError;

/// What one batch statement answers.
#[derive(Debug, sqlx::FromRow)]
pub(super) struct Batch {
    /// The highest key of the batch: the next batch starts after it.
    pub last_id: Option<i64>,
    /// Rows the batch looked at; fewer than the batch size means it was the last one.
    pub scanned: i64,
    /// Fines inserted or moved forward.
    pub written: i64,
}

/// Where a keyset walk stands:
///
/// ```ignore
/// let mut walk = KeysetWalk::new("accrue", ctx.batch_size);
/// while let Some(after) = walk.next(abort)? {
///     walk.record(run_batch(after).await?);
/// }
/// Ok(walk.written())
/// ```
pub(super) struct KeysetWalk {
    step: &'static str,
    batch_size: i64,
    /// The key to start after; `None` once a short batch ended the walk.
    after: Option<i64>,
    written: i64,
}

impl KeysetWalk {
    pub fn new(step: &'static str, batch_size: i64) -> Self {
        KeysetWalk {
            step,
            batch_size,
            after: Some(0),
            written: 0,
        }
    }

    /// The key the next batch starts after, `None` when the walk is done, or
    /// [`SettleError::Abandoned`] when `abort` was cancelled.
    pub fn next(&self, abort: &CancellationToken) -> Result<Option<i64>, SettleError> {
        if abort.is_cancelled() {
            return Err(SettleError::Abandoned);
        }
        Ok(self.after)
    }

    /// Takes a batch's answer into account.
    pub fn record(&mut self, batch: Batch) {
        self.written += batch.written;
        // The business date is on the enclosing `job.date` span.
        tracing::debug!(
            job.step = self.step,
            job.scanned = batch.scanned,
            job.rows = batch.written,
            "batch"
        );
        self.after = batch.last_id.filter(|_| batch.scanned == self.batch_size);
    }

    /// Fines written by the whole walk.
    pub fn written(&self) -> i64 {
        self.written
    }
}

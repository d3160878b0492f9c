//! The API's plain reads, on a connection kept for them ([`ReadConnections`]).

use sqlx::PgConnection;

use super::error::ApiError;
use crate::state::AppState;
#[cfg(doc)]
use crate::store::reads::ReadConnections;

/// Runs `statements` on a read connection (autocommit: nothing they do outlives them), and has
/// the connection checked after an error that may have broken it.
pub async fn read<T>(
    state: &AppState,
    statements: impl AsyncFnOnce(&mut PgConnection) -> sqlx::Result<T>,
) -> Result<T, ApiError> {
    let mut connection = state.reads.acquire().await?;
    let result = statements(&mut connection).await;
    Ok(connection.check(result)?)
}

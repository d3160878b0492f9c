//! Idempotency keys: the first successful response to a keyed POST, replayed for retries.

use serde_json::Value;
use sqlx::PgConnection;

/// What a key says about a request, inside the transaction that will perform it.
#[derive(Debug)]
pub enum Claim {
    /// First use of the key: perform the request, then [`complete`] in the same transaction.
    New,
    /// The key was used before for the same request: answer with the stored response.
    Replay { status: u16, body: Value },
    /// The key was used before for a different request.
    Mismatch,
}

/// Claims `key` in `scope` for a request whose body hashes to `request_hash`.
///
/// The row is inserted in the caller's transaction: a concurrent request with the same key waits
/// on the primary key until this transaction ends, then sees the completed response (or, if this
/// one rolled back, claims the key itself). No request is ever performed twice.
pub async fn claim(conn: &mut PgConnection, scope: &str, key: &str, request_hash: &[u8]) -> sqlx::Result<Claim> {
    let inserted = sqlx::query_scalar!(
        r#"
        insert into idempotency_key (scope, key, request_hash, response_status, response_body)
        -- status 0 marks a claim whose response is not stored yet; only its own transaction sees it
        values ($1, $2, $3, 0, 'null'::jsonb)
        on conflict (scope, key) do nothing
        returning 1 as "inserted!"
        "#,
        scope,
        key,
        request_hash
    )
    .fetch_optional(&mut *conn)
    .await?;
    if inserted.is_some() {
        return Ok(Claim::New);
    }
    let stored = sqlx::query!(
        r#"select request_hash, response_status, response_body from idempotency_key where scope = $1 and key = $2"#,
        scope,
        key
    )
    .fetch_one(&mut *conn)
    .await?;
    if stored.request_hash != request_hash {
        return Ok(Claim::Mismatch);
    }
    Ok(Claim::Replay {
        status: u16::try_from(stored.response_status).unwrap_or(200),
        body: stored.response_body,
    })
}

/// Stores the response of a request performed under a [`Claim::New`].
pub async fn complete(conn: &mut PgConnection, scope: &str, key: &str, status: u16, body: &Value) -> sqlx::Result<()> {
    sqlx::query!(
        "update idempotency_key set response_status = $3, response_body = $4 where scope = $1 and key = $2",
        scope,
        key,
        i16::try_from(status).unwrap_or(200),
        body
    )
    .execute(&mut *conn)
    .await?;
    Ok(())
}

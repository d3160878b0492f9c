//! Idempotency keys: the first successful response to a keyed POST, replayed for retries. A key
//! belongs to one caller and one route: the same key from another token or on another route is
//! another key.

use serde_json::Value;
use sqlx::PgConnection;

/// Whose key, on which route: the primary key of a stored response, with the key itself.
#[derive(Debug, Clone, Copy)]
pub struct KeyRef<'a> {
    /// A digest of the caller's token (`http::auth::Caller::key`).
    pub caller: &'a str,
    /// The route, e.g. `POST /api/v1/loans`.
    pub scope: &'a str,
    pub key: &'a str,
}

/// A stored response.
#[derive(Debug)]
pub struct Stored {
    pub status: u16,
    /// The `Location` header of the first response, if it had one.
    pub location: Option<String>,
    pub body: Value,
}

/// What a key says about a request, inside the transaction that will perform it.
#[derive(Debug)]
pub enum Claim {
    /// First use of the key: perform the request, then [`complete`] in the same transaction.
    New,
    /// The key was used before for the same request: answer with the stored response.
    Replay(Stored),
    /// The key was used before for a different request.
    Mismatch,
}

/// Claims `key` for a request whose body hashes to `request_hash`.
///
/// The row is inserted in the caller's transaction: a concurrent request with the same key waits
/// on the primary key until this transaction ends, then sees the completed response (or, if this
/// one rolled back, claims the key itself). No request is ever performed twice.
pub async fn claim(conn: &mut PgConnection, key: KeyRef<'_>, request_hash: &[u8]) -> sqlx::Result<Claim> {
    let inserted = sqlx::query_scalar!(
        r#"
        insert into idempotency_key (caller, scope, key, request_hash, response_status, response_body)
        -- status 0 marks a claim whose response is not stored yet; only its own transaction sees it
        values ($1, $2, $3, $4, 0, 'null'::jsonb)
        on conflict (caller, scope, key) do nothing
        returning 1 as "inserted!"
        "#,
        key.caller,
        key.scope,
        key.key,
        request_hash
    )
    .fetch_optional(&mut *conn)
    .await?;
    if inserted.is_some() {
        return Ok(Claim::New);
    }
    let stored = sqlx::query!(
        r#"
        select request_hash, response_status, response_location, response_body
        from idempotency_key
        where caller = $1 and scope = $2 and key = $3
        "#,
        key.caller,
        key.scope,
        key.key
    )
    .fetch_one(&mut *conn)
    .await?;
    if stored.request_hash != request_hash {
        return Ok(Claim::Mismatch);
    }
    Ok(Claim::Replay(Stored {
        status: u16::try_from(stored.response_status).unwrap_or(200),
        location: stored.response_location,
        body: stored.response_body,
    }))
}

/// Stores the response of a request performed under a [`Claim::New`].
pub async fn complete(conn: &mut PgConnection, key: KeyRef<'_>, response: &Stored) -> sqlx::Result<()> {
    sqlx::query!(
        r#"
        update idempotency_key
        set response_status = $4, response_location = $5, response_body = $6
        where caller = $1 and scope = $2 and key = $3
        "#,
        key.caller,
        key.scope,
        key.key,
        i16::try_from(response.status).unwrap_or(200),
        response.location,
        response.body
    )
    .execute(&mut *conn)
    .await?;
    Ok(())
}

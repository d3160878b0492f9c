//! The `Idempotency-Key` header for POSTs that create things (loans, payments).
//!
//! A client that times out cannot know whether its POST took effect. With a key, it can simply
//! retry: the same key and body return the first response (status, `Location` and body, with
//! `idempotent-replayed: true`), the same key with another body is a 422, and the effect happens
//! at most once. A key belongs to the caller's token and the route: another token, or another
//! route, using the same key makes a request of its own.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use sha2::{Digest, Sha256};
use sqlx::{PgConnection, PgPool};

use super::auth::Caller;
use super::error::ApiError;
use super::response::Created;
use crate::store::failure::Retries;
use crate::store::idempotency::{self, Claim, KeyRef, Stored};

/// The optional `Idempotency-Key` header (1 to 255 visible ASCII characters), with the caller it
/// belongs to.
#[derive(Debug, Clone)]
pub struct IdempotencyKey {
    key: Option<String>,
    caller: String,
}

impl<S: Send + Sync> FromRequestParts<S> for IdempotencyKey {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        // Set by the authorisation layer, which runs before every API handler.
        let caller = parts
            .extensions
            .get::<Caller>()
            .map(|c| c.key.clone())
            .ok_or(ApiError::Unauthorized)?;
        let mut values = parts.headers.get_all("idempotency-key").iter();
        let Some(value) = values.next() else {
            return Ok(IdempotencyKey { key: None, caller });
        };
        // Two keys: which one did the client mean? A proxy may read the other one.
        if values.next().is_some() {
            return Err(ApiError::BadRequest(
                "send one Idempotency-Key header, not several".to_owned(),
            ));
        }
        let key = value
            .to_str()
            .ok()
            .map(str::trim)
            .filter(|k| (1..=255).contains(&k.len()) && k.chars().all(|c| c.is_ascii_graphic()))
            .ok_or_else(|| ApiError::invalid("Idempotency-Key", "must be 1 to 255 visible ASCII characters"))?;
        Ok(IdempotencyKey {
            key: Some(key.to_owned()),
            caller,
        })
    }
}

/// What a keyed request came to: created now, or the first response to its key again.
pub enum Once<T> {
    Created(Created<T>),
    Replayed(Response),
}

impl IdempotencyKey {
    /// Creates something at most once per key. In one transaction: claims the key on `scope`
    /// (the route, e.g. `POST /api/v1/loans`) for `request`, runs what `create` makes (a
    /// closure per run of the transaction: an async closure called twice cannot yet promise a
    /// `Send` future), and stores its
    /// response with the key; the key, the effect and the stored response commit together or
    /// not at all. A retry with the key and the same body is answered the stored response, and
    /// `create` does not run. Without a key, `create` simply runs in the transaction. A
    /// transaction that loses a race (serialization failure, deadlock) runs again, a few times.
    pub async fn create_once<T: Serialize, C>(
        self,
        pool: &PgPool,
        scope: impl Into<String>,
        request: &impl Serialize,
        create: impl Fn() -> C,
    ) -> Result<Once<T>, ApiError>
    where
        C: AsyncFnOnce(&mut PgConnection) -> Result<Created<T>, ApiError>,
    {
        let scope = scope.into();
        let mut retries = Retries::default();
        loop {
            // The whole transaction again if it lost a race: it rolled back, nothing of it stays.
            match self
                .clone()
                .once_in_transaction(pool, scope.clone(), request, create())
                .await
            {
                Err(error) if retries.again(&error).await => continue,
                done => return done,
            }
        }
    }

    async fn once_in_transaction<T: Serialize>(
        self,
        pool: &PgPool,
        scope: String,
        request: &impl Serialize,
        create: impl AsyncFnOnce(&mut PgConnection) -> Result<Created<T>, ApiError>,
    ) -> Result<Once<T>, ApiError> {
        let mut tx = pool.begin().await?;
        let keyed = match self.begin(&mut tx, scope, request).await? {
            Begin::Proceed(keyed) => keyed,
            Begin::Replay(response) => return Ok(Once::Replayed(response)),
        };
        let created = create(&mut tx).await?;
        keyed
            .complete(&mut tx, StatusCode::CREATED, created.location.as_deref(), &created.body)
            .await?;
        tx.commit().await?;
        Ok(Once::Created(created))
    }
}

/// A keyed request in progress: claim it first, complete it after the effect, in one transaction.
struct Idempotent {
    caller: String,
    scope: String,
    key: Option<String>,
}

/// What to do after claiming.
enum Begin {
    Proceed(Idempotent),
    Replay(Response),
}

impl IdempotencyKey {
    /// Claims the key on `scope` for this request body.
    async fn begin(self, conn: &mut PgConnection, scope: String, request: &impl Serialize) -> Result<Begin, ApiError> {
        let IdempotencyKey { key, caller } = self;
        let Some(key) = key else {
            return Ok(Begin::Proceed(Idempotent {
                caller,
                scope,
                key: None,
            }));
        };
        let hash = Sha256::digest(serde_json::to_vec(request).map_err(anyhow::Error::from)?);
        let key_ref = KeyRef {
            caller: &caller,
            scope: &scope,
            key: &key,
        };
        match idempotency::claim(conn, key_ref, &hash).await? {
            Claim::New => Ok(Begin::Proceed(Idempotent {
                caller,
                scope,
                key: Some(key),
            })),
            Claim::Mismatch => Err(ApiError::invalid(
                "Idempotency-Key",
                "was already used with a different request body; use a new key",
            )),
            Claim::Replay(stored) => Ok(Begin::Replay(replay(stored))),
        }
    }
}

/// The stored response, as it was first answered, marked as a replay.
fn replay(stored: Stored) -> Response {
    let status = StatusCode::from_u16(stored.status).unwrap_or(StatusCode::OK);
    let mut response = (status, axum::Json(stored.body)).into_response();
    let headers = response.headers_mut();
    if let Some(location) = stored.location.and_then(|l| HeaderValue::from_str(&l).ok()) {
        headers.insert(header::LOCATION, location);
    }
    headers.insert("idempotent-replayed", HeaderValue::from_static("true"));
    response
}

impl Idempotent {
    /// Stores the response for later retries (no-op without a key): its status, its `Location`
    /// header if it has one, and its body.
    async fn complete(
        self,
        conn: &mut PgConnection,
        status: StatusCode,
        location: Option<&str>,
        body: &impl Serialize,
    ) -> Result<(), ApiError> {
        let Some(key) = &self.key else {
            return Ok(());
        };
        let stored = Stored {
            status: status.as_u16(),
            location: location.map(str::to_owned),
            body: serde_json::to_value(body).map_err(anyhow::Error::from)?,
        };
        let key_ref = KeyRef {
            caller: &self.caller,
            scope: &self.scope,
            key,
        };
        idempotency::complete(conn, key_ref, &stored).await?;
        Ok(())
    }
}

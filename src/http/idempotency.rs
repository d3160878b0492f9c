//! The `Idempotency-Key` header for POSTs that create things (loans, payments).
//!
//! A client that times out cannot know whether its POST took effect. With a key, it can simply
//! retry: the same key and body return the first response (with `idempotent-replayed: true`), the
//! same key with another body is a 422, and the effect happens at most once.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use sha2::{Digest, Sha256};
use sqlx::PgConnection;

use super::error::ApiError;
use crate::store::idempotency::{self, Claim};

/// The optional `Idempotency-Key` header (1 to 255 visible ASCII characters).
#[derive(Debug, Clone)]
pub struct IdempotencyKey(pub Option<String>);

impl<S: Send + Sync> FromRequestParts<S> for IdempotencyKey {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let Some(value) = parts.headers.get("idempotency-key") else {
            return Ok(IdempotencyKey(None));
        };
        let key = value
            .to_str()
            .ok()
            .map(str::trim)
            .filter(|k| (1..=255).contains(&k.len()) && k.chars().all(|c| c.is_ascii_graphic()))
            .ok_or_else(|| ApiError::invalid("Idempotency-Key", "must be 1 to 255 visible ASCII characters"))?;
        Ok(IdempotencyKey(Some(key.to_owned())))
    }
}

/// A keyed request in progress: claim it first, complete it after the effect, in one transaction.
pub struct Idempotent {
    scope: String,
    key: Option<String>,
}

/// What to do after claiming.
pub enum Begin {
    Proceed(Idempotent),
    Replay(Response),
}

impl IdempotencyKey {
    /// Claims the key for `scope` (the route, e.g. `POST /api/v1/loans`) and this request body.
    pub async fn begin(
        self,
        conn: &mut PgConnection,
        scope: String,
        request: &impl Serialize,
    ) -> Result<Begin, ApiError> {
        let Some(key) = self.0 else {
            return Ok(Begin::Proceed(Idempotent { scope, key: None }));
        };
        let hash = Sha256::digest(serde_json::to_vec(request).map_err(anyhow::Error::from)?);
        match idempotency::claim(conn, &scope, &key, &hash).await? {
            Claim::New => Ok(Begin::Proceed(Idempotent { scope, key: Some(key) })),
            Claim::Mismatch => Err(ApiError::invalid(
                "Idempotency-Key",
                "was already used with a different request body; use a new key",
            )),
            Claim::Replay { status, body } => {
                let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
                let mut response = (status, axum::Json(body)).into_response();
                response
                    .headers_mut()
                    .insert("idempotent-replayed", HeaderValue::from_static("true"));
                Ok(Begin::Replay(response))
            }
        }
    }
}

impl Idempotent {
    /// Stores the response for later retries (no-op without a key).
    pub async fn complete(
        self,
        conn: &mut PgConnection,
        status: StatusCode,
        body: &impl Serialize,
    ) -> Result<(), ApiError> {
        if let Some(key) = &self.key {
            let body = serde_json::to_value(body).map_err(anyhow::Error::from)?;
            idempotency::complete(conn, &self.scope, key, status.as_u16(), &body).await?;
        }
        Ok(())
    }
}

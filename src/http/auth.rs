//! Bearer-token authorisation for everything under `/api/v1`.
//!
//! The role a route needs is decided here, in one place, from the method and path (reads any
//! role, writes `librarian`, jobs and locks `admin`), so that no handler can forget to check.

use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, header};
use axum::middleware::Next;
use axum::response::Response;
use sha2::{Digest, Sha256};

use super::error::ApiError;
use crate::config::Role;
use crate::state::AppState;

/// The caller, put into request extensions for handlers that want it.
#[derive(Debug, Clone)]
pub struct Caller {
    pub role: Role,
    /// Who the caller is, for what belongs to one caller (idempotency keys): a digest of the
    /// token, never the token, so that it can be stored and logged.
    pub key: String,
}

impl Caller {
    fn new(role: Role, token: &str) -> Self {
        let digest = Sha256::new()
            .chain_update(b"finesettle caller\0")
            .chain_update(token.as_bytes())
            .finalize();
        // Hex into one string: a `format!` per byte was 16 allocations on every request.
        let mut key = String::with_capacity(32);
        for b in &digest[..16] {
            key.push(char::from(HEX[usize::from(b >> 4)]));
            key.push(char::from(HEX[usize::from(b & 0xf)]));
        }
        Caller { role, key }
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// The least role that may call `method path`.
pub fn required_role(method: &Method, path: &str) -> Role {
    let resource = path
        .trim_start_matches("/api/v1/")
        .split('/')
        .next()
        .unwrap_or_default();
    if matches!(resource, "jobs" | "locks") {
        Role::Admin
    } else if matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS) {
        Role::Reader
    } else {
        Role::Librarian
    }
}

pub async fn authorize(State(state): State<AppState>, mut request: Request, next: Next) -> Result<Response, ApiError> {
    let token = bearer_token(request.headers())?;
    let role = state.tokens.role_of(token).ok_or(ApiError::Unauthorized)?;
    let needed = required_role(request.method(), request.uri().path());
    if role < needed {
        return Err(ApiError::Forbidden(needed.as_str()));
    }
    let caller = Caller::new(role, token);
    request.extensions_mut().insert(caller);
    Ok(next.run(request).await)
}

/// The token of `Authorization: Bearer <token>`. The scheme is case-insensitive (RFC 9110
/// §11.1); two `Authorization` headers are a 400, since a proxy may have checked the other one.
fn bearer_token(headers: &HeaderMap) -> Result<&str, ApiError> {
    let mut values = headers.get_all(header::AUTHORIZATION).iter();
    let value = values.next().ok_or(ApiError::Unauthorized)?;
    if values.next().is_some() {
        return Err(ApiError::BadRequest(
            "send one Authorization header, not several".to_owned(),
        ));
    }
    value
        .to_str()
        .ok()
        .and_then(|v| v.trim().split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim())
        .filter(|token| !token.is_empty())
        .ok_or(ApiError::Unauthorized)
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn headers(values: &[&'static str]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for v in values {
            map.append(header::AUTHORIZATION, HeaderValue::from_static(v));
        }
        map
    }

    #[test]
    fn the_bearer_scheme_is_case_insensitive() {
        for value in ["Bearer abc", "bearer abc", "BEARER abc", "bEaReR  abc "] {
            assert_eq!(bearer_token(&headers(&[value])).ok(), Some("abc"), "{value}");
        }
        for value in ["Basic abc", "Bearer", "Bearer ", "Bearerabc", "abc"] {
            assert!(
                matches!(bearer_token(&headers(&[value])), Err(ApiError::Unauthorized)),
                "{value}"
            );
        }
        assert!(matches!(bearer_token(&HeaderMap::new()), Err(ApiError::Unauthorized)));
    }

    #[test]
    fn two_authorization_headers_are_a_bad_request() {
        assert!(matches!(
            bearer_token(&headers(&["Bearer abc", "Bearer def"])),
            Err(ApiError::BadRequest(_))
        ));
    }

    #[test]
    fn the_caller_key_depends_on_the_token_and_shows_nothing_of_it() {
        let a = Caller::new(Role::Admin, "token-aaaaaaaaaaaaaaaa");
        let b = Caller::new(Role::Admin, "token-bbbbbbbbbbbbbbbb");
        assert_ne!(a.key, b.key);
        assert_eq!(a.key.len(), 32);
        assert!(!a.key.contains("token"));
    }

    #[test]
    fn roles_by_route() {
        assert_eq!(required_role(&Method::GET, "/api/v1/members/1"), Role::Reader);
        assert_eq!(required_role(&Method::POST, "/api/v1/loans"), Role::Librarian);
        assert_eq!(required_role(&Method::GET, "/api/v1/jobs"), Role::Admin);
        assert_eq!(
            required_role(&Method::POST, "/api/v1/jobs/settle-fines/runs"),
            Role::Admin
        );
        assert_eq!(required_role(&Method::GET, "/api/v1/locks"), Role::Admin);
        assert_eq!(required_role(&Method::GET, "/api/v1/alerts"), Role::Reader);
    }
}

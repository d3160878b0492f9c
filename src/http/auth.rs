//! Bearer-token authorisation for everything under `/api/v1`.
//!
//! The role a route needs is decided here, in one place, from the method and path (reads any
//! role, writes `librarian`, jobs and locks `admin`), so that no handler can forget to check.

use axum::extract::{Request, State};
use axum::http::{Method, header};
use axum::middleware::Next;
use axum::response::Response;

use super::error::ApiError;
use crate::config::Role;
use crate::startup::AppState;

/// The role of the caller, put into request extensions for handlers that want it.
#[derive(Debug, Clone, Copy)]
pub struct Caller {
    pub role: Role,
}

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
    let token = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
        .map(str::trim)
        .ok_or(ApiError::Unauthorized)?;
    let role = state.tokens.role_of(token).ok_or(ApiError::Unauthorized)?;
    let needed = required_role(request.method(), request.uri().path());
    if role < needed {
        return Err(ApiError::Forbidden(needed.as_str()));
    }
    request.extensions_mut().insert(Caller { role });
    Ok(next.run(request).await)
}

#[cfg(test)]
mod tests {
    use super::*;

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

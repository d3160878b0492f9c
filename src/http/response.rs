//! Success responses that need more than a JSON body.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// `201 Created` with the created resource as the body, and a `Location` header where it has a
/// URL of its own.
pub struct Created<T> {
    pub location: Option<String>,
    pub body: T,
}

impl<T> Created<T> {
    pub fn new(location: String, body: T) -> Self {
        Created {
            location: Some(location),
            body,
        }
    }

    /// A created thing without a URL of its own (a ledger entry).
    pub fn without_location(body: T) -> Self {
        Created { location: None, body }
    }
}

impl<T: Serialize> IntoResponse for Created<T> {
    fn into_response(self) -> Response {
        let mut response = (StatusCode::CREATED, axum::Json(self.body)).into_response();
        if let Some(location) = self.location.and_then(|l| HeaderValue::from_str(&l).ok()) {
            response.headers_mut().insert(header::LOCATION, location);
        }
        response
    }
}

//! Success responses that need more than a JSON body.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// `201 Created` with a `Location` header and the created resource as the body.
pub struct Created<T> {
    pub location: String,
    pub body: T,
}

impl<T> Created<T> {
    pub fn new(location: String, body: T) -> Self {
        Created { location, body }
    }
}

impl<T: Serialize> IntoResponse for Created<T> {
    fn into_response(self) -> Response {
        let mut response = (StatusCode::CREATED, axum::Json(self.body)).into_response();
        if let Ok(location) = HeaderValue::from_str(&self.location) {
            response.headers_mut().insert(header::LOCATION, location);
        }
        response
    }
}

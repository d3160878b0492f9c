//! The answers of a route whose path names one resource: the resource, or a 404 that names its
//! kind. Written once, with their OpenAPI description, for every kind of resource.

use std::collections::BTreeMap;
use std::marker::PhantomData;

use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::openapi::{self, ContentBuilder, Ref, RefOr, ResponseBuilder};
use utoipa::{IntoResponses, ToSchema};

use super::error::ApiError;

/// A kind of resource a path can name (by its id, or a job by its name).
pub trait Resource: ToSchema {
    /// Its name in messages: `book` answers "No such book" and "book not found".
    const NAME: &'static str;
}

/// `200 OK` with the resource as the body. Documented as the answers of a `GET /…/{id}`: the
/// resource, or a 404 when there is none.
pub struct Found<R>(pub R);

impl<R: Resource + Serialize> IntoResponse for Found<R> {
    fn into_response(self) -> Response {
        axum::Json(self.0).into_response()
    }
}

impl<R: Resource> IntoResponses for Found<R> {
    fn responses() -> BTreeMap<String, RefOr<openapi::Response>> {
        let content = ContentBuilder::new()
            .schema(Some(Ref::from_schema_name(R::name())))
            .build();
        let found = ResponseBuilder::new()
            .description(format!("The {}", R::NAME))
            .content("application/json", content);
        let mut responses = NoSuch::<R>::responses();
        responses.insert("200".to_owned(), found.into());
        responses
    }
}

/// The resource, or the 404 naming its kind.
pub fn found<R: Resource>(resource: Option<R>) -> Result<Found<R>, ApiError> {
    resource.map(Found).ok_or_else(not_found::<R>)
}

/// The 404 of a path that names no `R`.
pub fn not_found<R: Resource>() -> ApiError {
    ApiError::NotFound(R::NAME)
}

/// Documents the 404 of a route whose path names an `R`: "No such book".
pub struct NoSuch<R>(PhantomData<R>);

impl<R: Resource> IntoResponses for NoSuch<R> {
    fn responses() -> BTreeMap<String, RefOr<openapi::Response>> {
        let response = ResponseBuilder::new().description(format!("No such {}", R::NAME));
        BTreeMap::from([("404".to_owned(), response.into())])
    }
}

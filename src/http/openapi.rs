//! The OpenAPI 3.1 document, generated from the handlers (utoipa), served at
//! `/api-docs/openapi.json` with Swagger UI at `/docs`. The UI's assets are compiled into the
//! binary (`utoipa-swagger-ui`'s `vendored` feature): nothing is fetched at build or run time.

use axum::Router;
use axum::http::Method;
use utoipa::openapi::OpenApi as OpenApiDocument;
use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::path::{Operation, Parameter, ParameterIn};
use utoipa::openapi::schema::ObjectBuilder;
use utoipa::openapi::schema::{SchemaType, Type};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{Content, ContentBuilder, Ref, RefOr, Response, ResponseBuilder, Schema};
use utoipa::{Modify, OpenApi};
use utoipa_axum::router::OpenApiRouter;
use utoipa_swagger_ui::SwaggerUi;

use super::BODY_LIMIT_BYTES;
use super::auth::required_role;
use super::error::Problem;
use crate::config::Role;
use crate::state::AppState;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "finesettle",
        description = "Loans, overdue fines and a nightly settlement job that runs exactly once across replicas.",
        license(name = "MIT OR Apache-2.0", identifier = "MIT OR Apache-2.0"),
    ),
    // Every error answer's body; the operations refer to it (see `add_shared_parts`).
    components(schemas(Problem)),
    modifiers(&BearerAuth),
    tags(
        (name = "members", description = "Members, their balance, ledger and payments"),
        (name = "books", description = "Book copies"),
        (name = "loans", description = "Loans and returns"),
        (name = "fines", description = "Overdue fines"),
        (name = "jobs", description = "The settlement job: schedule, executions, manual runs, audits (admin)"),
        (name = "locks", description = "Job locks (admin)"),
        (name = "alerts", description = "Execution alerts"),
    )
)]
struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut OpenApiDocument) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "A token from FINESETTLE_API_TOKENS; the role decides what it may do.",
                    ))
                    .build(),
            ),
        );
    }
}

/// The document's head (info, security scheme, tags); the routes add their paths to it.
pub fn base_document() -> OpenApiDocument {
    let mut doc = ApiDoc::openapi();
    doc.info.version = env!("CARGO_PKG_VERSION").to_owned();
    doc
}

/// The complete document, as served and as committed in `openapi/openapi.json`.
pub fn document() -> OpenApiDocument {
    split(super::api_routes()).1
}

/// Splits the API into its axum router and its finished document: the handlers' own responses
/// plus the parts every route shares (see [`add_shared_parts`]).
pub fn split(routes: OpenApiRouter<AppState>) -> (Router<AppState>, OpenApiDocument) {
    let (router, mut document) = routes.split_for_parts();
    add_shared_parts(&mut document);
    (router, document)
}

/// Documents what comes from the router, the extractors and [`ApiError`](super::error::ApiError) rather than from a
/// handler, on every operation it reaches, so that each handler lists only its own answers:
///
/// - the bearer security requirement, with its 401, and a 403 where [`required_role`] asks more
///   than `reader` (every documented route sits behind [`authorize`](super::auth::authorize));
/// - the 400 of the extractors: a path id that is not an integer, a query string they cannot read
///   (`Query`), a body that is not JSON (`Json`);
/// - 413 and 415 from the JSON body extractor;
/// - the 422 of a list's `limit` and `cursor` ([`page_request`](super::pagination::page_request)),
///   on every operation that takes both;
/// - the 503 of a database that is unavailable (a failover, a restart, a read-only node), with
///   its `Retry-After`, which any operation may answer (docs/CONTRACT.md §5.5);
/// - the `application/problem+json` body of every error answer, the only form `ApiError` answers.
///
/// A handler that documents one of these responses itself keeps its own wording.
fn add_shared_parts(document: &mut OpenApiDocument) {
    for (path, item) in document.paths.paths.iter_mut() {
        let operations = [
            (Method::GET, &mut item.get),
            (Method::POST, &mut item.post),
            (Method::PUT, &mut item.put),
            (Method::PATCH, &mut item.patch),
            (Method::DELETE, &mut item.delete),
        ];
        for (method, operation) in operations {
            if let Some(operation) = operation {
                add_to_operation(operation, &method, path);
            }
        }
    }
}

fn add_to_operation(operation: &mut Operation, method: &Method, path: &str) {
    operation.security = Some(vec![SecurityRequirement::new("bearer", Vec::<String>::new())]);
    let mut shared = vec![("401", "Missing or unknown bearer token".to_owned())];
    match required_role(method, path) {
        Role::Reader => {}
        role => shared.push(("403", format!("Needs the {} role", role.as_str()))),
    }
    if let Some(malformed) = malformed_request(operation) {
        shared.push(("400", malformed));
    }
    if takes_a_page(operation) {
        shared.push(("422", "Invalid limit or cursor".to_owned()));
    }
    if operation.request_body.is_some() {
        shared.push(("413", format!("Body over {} KiB", BODY_LIMIT_BYTES / 1024)));
        shared.push(("415", "Body is not application/json".to_owned()));
    }
    let responses = &mut operation.responses.responses;
    for (status, description) in shared {
        responses
            .entry(status.to_owned())
            .or_insert_with(|| RefOr::T(Response::new(description)));
    }
    responses
        .entry("503".to_owned())
        .or_insert_with(|| RefOr::T(unavailable()));
    for (status, response) in responses.iter_mut() {
        if let RefOr::T(response) = response
            && is_error(status)
            && response.content.is_empty()
        {
            response
                .content
                .insert(PROBLEM_JSON.to_owned(), RefOr::T(problem_content()));
        }
    }
}

/// The 400 the extractors answer, worded by what they read: "Malformed id or JSON" for a route
/// with an integer path id and a body. A string path parameter reads any text, a header is read
/// by its own extractor: neither is counted.
fn malformed_request(operation: &Operation) -> Option<String> {
    let mut parts = Vec::new();
    let mut query = false;
    for parameter in parameters(operation) {
        match parameter.parameter_in {
            ParameterIn::Path if !is_string(parameter) => parts.push(parameter.name.as_str()),
            ParameterIn::Query => query = true,
            _ => {}
        }
    }
    if query {
        parts.push("query");
    }
    if operation.request_body.is_some() {
        parts.push("JSON");
    }
    (!parts.is_empty()).then(|| format!("Malformed {}", parts.join(" or ")))
}

/// Whether the operation reads a page: the query parameters `limit` and `cursor`.
fn takes_a_page(operation: &Operation) -> bool {
    let query: Vec<&str> = parameters(operation)
        .filter(|p| p.parameter_in == ParameterIn::Query)
        .map(|p| p.name.as_str())
        .collect();
    query.contains(&"limit") && query.contains(&"cursor")
}

/// The operation's own parameters (it refers to no shared ones).
fn parameters(operation: &Operation) -> impl Iterator<Item = &Parameter> {
    operation.parameters.iter().flatten().filter_map(|p| match p {
        RefOr::T(parameter) => Some(parameter),
        RefOr::Ref(_) => None,
    })
}

fn is_string(parameter: &Parameter) -> bool {
    matches!(
        &parameter.schema,
        Some(RefOr::T(Schema::Object(object))) if object.schema_type == SchemaType::Type(Type::String)
    )
}

/// The shared 503: `code` `unavailable`, nothing written, retry after `Retry-After` seconds.
fn unavailable() -> Response {
    let seconds = ObjectBuilder::new().schema_type(Type::Integer).minimum(Some(1)).build();
    ResponseBuilder::new()
        .description(
            "The database or the lock store is unavailable (a failover, a restart, a read-only node) or the \
             service is stopping: nothing was written; send the request again after Retry-After seconds",
        )
        .header(
            "Retry-After",
            HeaderBuilder::new()
                .schema(Some(seconds))
                .description(Some("Seconds to wait before sending the request again"))
                .build(),
        )
        .build()
}

fn is_error(status: &str) -> bool {
    status.starts_with('4') || status.starts_with('5')
}

const PROBLEM_JSON: &str = "application/problem+json";

fn problem_content() -> Content {
    ContentBuilder::new()
        .schema(Some(Ref::from_schema_name("Problem")))
        .build()
}

/// `/api-docs/openapi.json` and the interactive docs at `/docs`.
pub fn docs_routes(document: OpenApiDocument) -> Router<AppState> {
    let docs: Router<AppState> = SwaggerUi::new("/docs").url("/api-docs/openapi.json", document).into();
    // Swagger UI runs scripts of its own, so only framing is restricted: a page that frames the
    // docs could overlay them and trick an operator into clicking (clickjacking).
    docs.layer(tower_http::set_header::SetResponseHeaderLayer::overriding(
        axum::http::header::CONTENT_SECURITY_POLICY,
        axum::http::HeaderValue::from_static("frame-ancestors 'none'"),
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::document;

    /// Every `$ref` in `value`, depth first.
    fn refs<'a>(value: &'a Value, found: &mut Vec<&'a str>) {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(target)) = map.get("$ref") {
                    found.push(target);
                }
                map.values().for_each(|v| refs(v, found));
            }
            Value::Array(items) => items.iter().for_each(|v| refs(v, found)),
            _ => {}
        }
    }

    /// A response documented by a type of our own (`Found<R>`) refers to its schema by name
    /// without registering it: some route must register that name.
    #[test]
    fn every_ref_resolves_in_the_document() {
        let document = serde_json::to_value(document()).expect("the document serialises");
        let mut found = Vec::new();
        refs(&document, &mut found);
        assert!(!found.is_empty());
        let dangling: Vec<&str> = found
            .into_iter()
            .filter(|target| {
                let pointer = target.strip_prefix('#');
                pointer.and_then(|p| document.pointer(p)).is_none()
            })
            .collect();
        assert!(dangling.is_empty(), "$refs to nothing: {dangling:?}");
    }
}

//! The OpenAPI 3.1 document, generated from the handlers (utoipa), served at
//! `/api-docs/openapi.json` with Swagger UI at `/docs`. The UI's assets are compiled into the
//! binary (`utoipa-swagger-ui`'s `vendored` feature): nothing is fetched at build or run time.

use axum::Router;
use axum::http::Method;
use utoipa::openapi::OpenApi as OpenApiDocument;
use utoipa::openapi::path::Operation;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{ContentBuilder, Ref, RefOr, Response, ResponseBuilder};
use utoipa::{Modify, OpenApi};
use utoipa_axum::router::OpenApiRouter;
use utoipa_swagger_ui::SwaggerUi;

use super::BODY_LIMIT_BYTES;
use super::auth::required_role;
use crate::config::Role;
use crate::state::AppState;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "finesettle",
        description = "Loans, overdue fines and a nightly settlement job that runs exactly once across replicas.",
        license(name = "MIT OR Apache-2.0", identifier = "MIT OR Apache-2.0"),
    ),
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
/// plus the ones every route shares (see [`add_shared_responses`]).
pub fn split(routes: OpenApiRouter<AppState>) -> (Router<AppState>, OpenApiDocument) {
    let (router, mut document) = routes.split_for_parts();
    add_shared_responses(&mut document);
    (router, document)
}

/// Documents the answers that come from the middleware rather than from a handler, on every
/// operation they can reach, so that each handler lists only its own: 401 from the bearer check,
/// 403 where [`required_role`] asks more than `reader`, and 413/415 from the JSON body extractor.
/// A handler that documents one of these itself keeps its own wording.
fn add_shared_responses(document: &mut OpenApiDocument) {
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
    let mut shared = Vec::new();
    if operation.security.as_ref().is_some_and(|s| !s.is_empty()) {
        shared.push(("401", "Missing or unknown bearer token".to_owned()));
        match required_role(method, path) {
            Role::Reader => {}
            role => shared.push(("403", format!("Needs the {} role", role.as_str()))),
        }
    }
    if operation.request_body.is_some() {
        shared.push(("413", format!("Body over {} KiB", BODY_LIMIT_BYTES / 1024)));
        shared.push(("415", "Body is not application/json".to_owned()));
    }
    for (status, description) in shared {
        operation
            .responses
            .responses
            .entry(status.to_owned())
            .or_insert_with(|| problem(&description));
    }
}

fn problem(description: &str) -> RefOr<Response> {
    let content = ContentBuilder::new()
        .schema(Some(Ref::from_schema_name("Problem")))
        .build();
    RefOr::T(
        ResponseBuilder::new()
            .description(description)
            .content("application/problem+json", content)
            .build(),
    )
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

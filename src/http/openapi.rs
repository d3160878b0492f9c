//! The OpenAPI 3.1 document, generated from the handlers (utoipa), served at
//! `/api-docs/openapi.json` with Swagger UI at `/docs`. The UI's assets are compiled into the
//! binary (`utoipa-swagger-ui`'s `vendored` feature): nothing is fetched at build or run time.

use axum::Router;
use utoipa::openapi::OpenApi as OpenApiDocument;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};
use utoipa_swagger_ui::SwaggerUi;

use crate::startup::AppState;

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
        (name = "jobs", description = "The settlement job: schedule, executions, manual runs (admin)"),
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
    super::api_routes().into_openapi()
}

/// `/api-docs/openapi.json` and the interactive docs at `/docs`.
pub fn docs_routes(document: OpenApiDocument) -> Router<AppState> {
    SwaggerUi::new("/docs").url("/api-docs/openapi.json", document).into()
}

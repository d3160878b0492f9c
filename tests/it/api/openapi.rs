//! The committed OpenAPI document (`openapi/openapi.json`) must equal what the code generates.
//! After changing a handler's signature or docs, regenerate it:
//! `cargo run -- openapi > openapi/openapi.json`.

use crate::common::spawn_app;

fn generated() -> String {
    finesettle::http::openapi::document()
        .to_pretty_json()
        .expect("document serialises")
}

#[test]
fn committed_document_matches_the_code() {
    let committed = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/openapi/openapi.json"))
        .expect("openapi/openapi.json is committed");
    assert!(
        committed.trim_end() == generated().trim_end(),
        "openapi/openapi.json is stale: run `cargo run -- openapi > openapi/openapi.json` and commit it"
    );
}

#[test]
fn document_is_openapi_3_1_with_bearer_auth() {
    let doc: serde_json::Value = serde_json::from_str(&generated()).unwrap();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"));
    assert_eq!(doc["components"]["securitySchemes"]["bearer"]["scheme"], "bearer");
    assert!(doc["paths"]["/api/v1/members"]["post"].is_object());
}

#[tokio::test]
async fn the_served_document_is_the_generated_one_and_docs_are_served() {
    let app = spawn_app().await;
    let served = app
        .request(reqwest::Method::GET, "/api-docs/openapi.json", None, None)
        .await;
    let generated: serde_json::Value = serde_json::from_str(&generated()).unwrap();
    assert_eq!(served.ok(200), &generated);
    let docs = app.client.get(format!("{}/docs/", app.address)).send().await.unwrap();
    assert_eq!(docs.status(), 200);
    let page = docs.text().await.unwrap();
    assert!(page.contains("swagger-ui"), "the docs page is Swagger UI");
    assert!(!page.contains("https://"), "the docs page loads nothing from elsewhere");
}

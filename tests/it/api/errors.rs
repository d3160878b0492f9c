//! Cross-cutting error behaviour: auth, unknown routes, methods, body limits, malformed JSON.

use reqwest::Method;
use serde_json::json;

use crate::common::{LIBRARIAN_TOKEN, READER_TOKEN, spawn_app};

#[tokio::test]
async fn a_missing_or_unknown_token_is_401() {
    let app = spawn_app().await;
    let missing = app.request(Method::GET, "/api/v1/members", None, None).await;
    missing.problem(401);
    assert_eq!(missing.headers["www-authenticate"], "Bearer");
    app.request(Method::GET, "/api/v1/members", Some("not-a-real-token-at-all"), None)
        .await
        .problem(401);
}

#[tokio::test]
async fn a_reader_cannot_write() {
    let app = spawn_app().await;
    let before = app.row_counts().await;
    let reply = app
        .request(
            Method::POST,
            "/api/v1/members",
            Some(READER_TOKEN),
            Some(json!({"name": "Ada", "email": "ada@example.org"})),
        )
        .await;
    assert_eq!(reply.problem(403)["code"], "forbidden");
    assert_eq!(app.row_counts().await, before);
}

#[tokio::test]
async fn unknown_routes_and_methods_are_problems() {
    let app = spawn_app().await;
    app.get("/api/v1/nothing-here").await.problem(404);
    app.request(
        Method::DELETE,
        "/api/v1/members",
        Some(crate::common::ADMIN_TOKEN),
        None,
    )
    .await
    .problem(405);
}

#[tokio::test]
async fn malformed_json_is_400_and_wrong_media_type_is_415() {
    let app = spawn_app().await;
    let before = app.row_counts().await;
    app.send_raw(
        Method::POST,
        "/api/v1/members",
        LIBRARIAN_TOKEN,
        "application/json",
        "{\"name\": ",
    )
    .await
    .problem(400);
    app.send_raw(Method::POST, "/api/v1/members", LIBRARIAN_TOKEN, "text/plain", "hello")
        .await
        .problem(415);
    assert_eq!(app.row_counts().await, before);
}

#[tokio::test]
async fn a_body_over_64_kib_is_413() {
    let app = spawn_app().await;
    let name = "x".repeat(70 * 1024);
    let body = serde_json::to_vec(&json!({"name": name, "email": "big@example.org"})).unwrap();
    let before = app.row_counts().await;
    app.send_raw(
        Method::POST,
        "/api/v1/members",
        LIBRARIAN_TOKEN,
        "application/json",
        body,
    )
    .await
    .problem(413);
    assert_eq!(app.row_counts().await, before);
}

#[tokio::test]
async fn a_json_array_in_place_of_an_object_is_422() {
    let app = spawn_app().await;
    let before = app.row_counts().await;
    let reply = app.post("/api/v1/members", json!(["Ada", "ada@example.org"])).await;
    assert_eq!(reply.invalid_fields(), ["body"]);
    assert_eq!(app.row_counts().await, before);
}

//! Cross-cutting error behaviour: auth, unknown routes, methods, body limits, malformed JSON.

use reqwest::Method;
use serde_json::json;

use crate::common::{ADMIN_TOKEN, READER_TOKEN, spawn_app};

#[tokio::test]
async fn a_missing_or_unknown_token_is_401() {
    let app = spawn_app().await;
    let missing = app.get_as("/api/v1/members", None).await;
    missing.problem(401);
    assert_eq!(missing.headers["www-authenticate"], "Bearer");
    app.get_as("/api/v1/members", Some("not-a-real-token-at-all"))
        .await
        .problem(401);
}

#[tokio::test]
async fn a_reader_cannot_write() {
    let app = spawn_app().await;
    let before = app.row_counts().await;
    let body = json!({"name": "Ada", "email": "ada@example.org"});
    let reply = app.post_as("/api/v1/members", Some(READER_TOKEN), body).await;
    reply.problem_code(403, "forbidden");
    assert_eq!(app.row_counts().await, before);
}

#[tokio::test]
async fn unknown_routes_and_methods_are_problems() {
    let app = spawn_app().await;
    app.get("/api/v1/nothing-here").await.problem(404);
    let delete = app.request(Method::DELETE, "/api/v1/members", Some(ADMIN_TOKEN), None);
    delete.await.problem(405);
}

#[tokio::test]
async fn malformed_json_is_400_and_wrong_media_type_is_415() {
    let app = spawn_app().await;
    let before = app.row_counts().await;
    app.assert_bad_bodies_refused("/api/v1/members", "{\"name\": ", "hello")
        .await;
    assert_eq!(app.row_counts().await, before);
}

#[tokio::test]
async fn a_body_over_64_kib_is_413() {
    let app = spawn_app().await;
    let name = "x".repeat(70 * 1024);
    let body = serde_json::to_vec(&json!({"name": name, "email": "big@example.org"})).unwrap();
    let before = app.row_counts().await;
    let reply = app.post_text("/api/v1/members", "application/json", body).await;
    reply.problem(413);
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

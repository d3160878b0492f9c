use serde_json::json;

use crate::common::spawn_app;

#[tokio::test]
async fn create_then_get_a_member_with_a_zero_balance() {
    let app = spawn_app().await;
    let reply = app
        .post(
            "/api/v1/members",
            json!({"name": " Ada Lovelace ", "email": "ada@example.org"}),
        )
        .await;
    let member = reply.ok(201);
    assert_eq!(member["name"], "Ada Lovelace");
    assert_eq!(member["balance_cents"], 0);
    let id = member["id"].as_i64().unwrap();
    assert_eq!(reply.headers["location"], format!("/api/v1/members/{id}").as_str());

    let fetched = app.get_member(id).await;
    assert_eq!(fetched.ok(200)["email"], "ada@example.org");
    assert!(fetched.body["created_at"].as_str().unwrap().ends_with('Z'));
}

#[tokio::test]
async fn invalid_fields_are_named_and_nothing_is_written() {
    let app = spawn_app().await;
    let before = app.row_counts().await;
    let cases = [
        (json!({"name": "  ", "email": "not-an-email"}), vec!["email", "name"]),
        (json!({"name": 42, "email": "a@b.c"}), vec!["name"]),
        (json!({"email": "a@b.c"}), vec!["name"]),
        // NUL, which PostgreSQL refuses in text, is a 422 naming the field, not a 500.
        (json!({"name": "Ada\0", "email": "a\0@b.c"}), vec!["email", "name"]),
    ];
    for (body, expected) in cases {
        let fields = app.post("/api/v1/members", body.clone()).await.sorted_invalid_fields();
        assert_eq!(fields, expected, "{body}");
    }
    assert_eq!(app.row_counts().await, before);
}

#[tokio::test]
async fn a_duplicate_email_is_409_whatever_its_case() {
    let app = spawn_app().await;
    app.create_member("Ada", "ada@example.org").await;
    let before = app.row_counts().await;
    let reply = app
        .post("/api/v1/members", json!({"name": "Ada 2", "email": "ADA@example.org"}))
        .await;
    reply.problem_code(409, "email_taken");
    assert_eq!(app.row_counts().await, before);
}

#[tokio::test]
async fn unknown_and_malformed_ids() {
    let app = spawn_app().await;
    app.get_member(999_999).await.problem_code(404, "not_found");
    app.get("/api/v1/members/abc").await.problem(400);
}

#[tokio::test]
async fn members_are_paginated() {
    let app = spawn_app().await;
    for i in 0..5 {
        app.create_member(&format!("M{i}"), &format!("m{i}@example.org")).await;
    }
    let first = app.get("/api/v1/members?limit=2").await;
    let first = first.ok(200);
    assert_eq!(first["items"].as_array().unwrap().len(), 2);
    let cursor = first["next_cursor"].as_str().unwrap();
    let second = app.get(&format!("/api/v1/members?limit=2&cursor={cursor}")).await;
    assert_eq!(second.ok(200)["items"][0]["name"], "M2");
    let last = app.get("/api/v1/members?limit=500").await;
    assert_eq!(last.ok(200)["items"].as_array().unwrap().len(), 5);
    assert!(last.body["next_cursor"].is_null());
    app.get("/api/v1/members?limit=501").await.invalid_fields();
    app.get("/api/v1/members?cursor=zzz").await.invalid_fields();
    app.get("/api/v1/members?limit=abc").await.problem(400);
}

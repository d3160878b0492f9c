use serde_json::json;

use crate::common::{LIBRARIAN_TOKEN, READER_TOKEN, spawn_app};

#[tokio::test]
async fn create_then_get_a_book_with_a_normalised_isbn() {
    let app = spawn_app().await;
    let body = json!({"title": "  The Art of Computer Programming ", "isbn": "978-0-306 40615-7"});
    let reply = app.post_as("/api/v1/books", Some(LIBRARIAN_TOKEN), body).await;
    let book = reply.ok(201);
    assert_eq!(book["title"], "The Art of Computer Programming");
    assert_eq!(book["isbn"], "9780306406157");
    assert_eq!(book["on_loan"], false);
    let id = book["id"].as_i64().unwrap();
    assert_eq!(reply.headers["location"], format!("/api/v1/books/{id}").as_str());

    let fetched = app.get_as(&format!("/api/v1/books/{id}"), Some(READER_TOKEN)).await;
    assert_eq!(fetched.ok(200)["isbn"], "9780306406157");
    assert!(fetched.body["created_at"].as_str().unwrap().ends_with('Z'));
}

#[tokio::test]
async fn the_isbn_is_optional_and_an_isbn_10_may_end_in_x() {
    let app = spawn_app().await;
    let book = app.create_book("Untitled").await;
    assert!(book["isbn"].is_null());
    let reply = app
        .post("/api/v1/books", json!({"title": "T", "isbn": "0-8044-2957-x"}))
        .await;
    assert_eq!(reply.ok(201)["isbn"], "080442957X");
    let reply = app.post("/api/v1/books", json!({"title": "T", "isbn": null})).await;
    assert!(reply.ok(201)["isbn"].is_null());
}

#[tokio::test]
async fn invalid_fields_are_named_and_nothing_is_written() {
    let app = spawn_app().await;
    let before = app.row_counts().await;
    let cases = [
        (json!({"title": "   "}), vec!["title"]),
        (json!({"title": "x".repeat(501)}), vec!["title"]),
        (json!({"title": "nul \u{0} inside"}), vec!["title"]),
        (json!({"title": "T", "isbn": "978-0-306-40615-8"}), vec!["isbn"]),
        (json!({"title": "T", "isbn": "12345"}), vec!["isbn"]),
        (json!({"title": "T", "isbn": ""}), vec!["isbn"]),
        (json!({"title": "", "isbn": "0306406153"}), vec!["isbn", "title"]),
        (json!({"title": "T", "isbn": 9780306406157_i64}), vec!["isbn"]),
        (json!({"title": 42}), vec!["title"]),
        (json!({"isbn": "9780306406157"}), vec!["title"]),
    ];
    for (body, expected) in cases {
        let fields = app.post("/api/v1/books", body.clone()).await.sorted_invalid_fields();
        assert_eq!(fields, expected, "{body}");
    }
    assert_eq!(app.row_counts().await, before);
    // Exactly 500 characters (not bytes) is fine; one more is not (checked above).
    app.post("/api/v1/books", json!({"title": "é".repeat(500)}))
        .await
        .ok(201);
}

#[tokio::test]
async fn malformed_bodies_unknown_fields_and_bad_tokens_are_refused() {
    let app = spawn_app().await;
    let before = app.row_counts().await;
    app.assert_bad_bodies_refused("/api/v1/books", "{\"title\": ", "{\"title\": \"T\"}")
        .await;
    let reply = app
        .post("/api/v1/books", json!({"title": "T", "author": "Knuth"}))
        .await;
    reply.problem(422);
    let reader = app.post_as("/api/v1/books", Some(READER_TOKEN), json!({"title": "T"}));
    reader.await.problem_code(403, "forbidden");
    let missing = app.post_as("/api/v1/books", None, json!({"title": "T"}));
    missing.await.problem(401);
    let wrong = app.get_as("/api/v1/books", Some("wrong-token-0123456789"));
    wrong.await.problem(401);
    assert_eq!(app.row_counts().await, before);
}

#[tokio::test]
async fn on_loan_follows_the_open_loan() {
    let app = spawn_app().await;
    let member = app.create_member("Ada", "ada@example.org").await;
    let book = app.create_book("Notes").await;
    let (member_id, book_id) = (member["id"].as_i64().unwrap(), book["id"].as_i64().unwrap());
    let path = format!("/api/v1/books/{book_id}");

    let loan = app.create_loan(member_id, book_id, app.today().await).await;
    assert_eq!(app.get(&path).await.ok(200)["on_loan"], true);
    app.return_loan(loan["id"].as_i64().unwrap()).await;
    assert_eq!(app.get(&path).await.ok(200)["on_loan"], false);
}

#[tokio::test]
async fn unknown_and_malformed_ids() {
    let app = spawn_app().await;
    app.get("/api/v1/books/999999").await.problem_code(404, "not_found");
    app.get("/api/v1/books/abc").await.problem(400);
    app.get("/api/v1/books/99999999999999999999").await.problem(400);
}

#[tokio::test]
async fn books_are_paginated() {
    let app = spawn_app().await;
    for i in 0..5 {
        app.create_book(&format!("B{i}")).await;
    }
    let first = app.get("/api/v1/books?limit=2").await;
    let first = first.ok(200);
    assert_eq!(first["items"].as_array().unwrap().len(), 2);
    let cursor = first["next_cursor"].as_str().unwrap();
    let second = app.get(&format!("/api/v1/books?limit=2&cursor={cursor}")).await;
    let titles: Vec<_> = second.ok(200)["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["title"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(titles, ["B2", "B3"]);
    let all = app.get("/api/v1/books").await;
    assert_eq!(all.ok(200)["items"].as_array().unwrap().len(), 5);
    assert!(all.body["next_cursor"].is_null());
    assert_eq!(all.body["items"][0]["on_loan"], false);
    app.get("/api/v1/books?limit=0").await.invalid_fields();
    app.get("/api/v1/books?limit=501").await.invalid_fields();
    app.get("/api/v1/books?cursor=zzz").await.invalid_fields();
    app.get("/api/v1/books?limit=abc").await.problem(400);
}

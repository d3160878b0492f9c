//! Case 6: an idempotency key belongs to the caller's token and the route; a replay answers the
//! first response whole (status, `Location`, body); two keys in one request are a 400.

use serde_json::{Value, json};

use crate::common::{ADMIN_TOKEN, LIBRARIAN_TOKEN, Reply, TestApp, spawn_app};

async fn post_keyed(app: &TestApp, token: &str, path: &str, keys: &[&str], body: &Value) -> (Reply, Option<String>) {
    let mut request = app
        .client
        .post(format!("{}{}", app.address, path))
        .bearer_auth(token)
        .json(body);
    for key in keys {
        request = request.header("idempotency-key", *key);
    }
    let response = request.send().await.unwrap();
    let location = response
        .headers()
        .get("location")
        .map(|l| l.to_str().unwrap().to_owned());
    (crate::common::into_reply(response).await, location)
}

#[tokio::test]
async fn a_key_is_the_callers_own_and_its_replay_is_the_first_response() {
    let app = spawn_app().await;
    let member = app.create_member("Ada Lovelace", "ada@example.org").await;
    let first_book = app.create_book("Notes").await;
    let second_book = app.create_book("Sketch").await;
    let due = app.today().await + chrono::Days::new(14);
    let loan = |book: &Value| json!({ "member_id": member["id"], "book_id": book["id"], "due_on": due });

    // The librarian lends the first book under key K.
    let (created, location) = post_keyed(&app, LIBRARIAN_TOKEN, "/api/v1/loans", &["K"], &loan(&first_book)).await;
    created.ok(201);
    let location = location.expect("a 201 names the loan");

    // The admin's K is another key: a request of its own, with its own body, performed.
    let (other, other_location) = post_keyed(&app, ADMIN_TOKEN, "/api/v1/loans", &["K"], &loan(&second_book)).await;
    other.ok(201);
    assert_ne!(other.body["id"], created.body["id"]);
    assert_ne!(other_location.as_deref(), Some(location.as_str()));

    // The librarian's retry gets the first response back, Location included.
    let (replayed, replayed_location) =
        post_keyed(&app, LIBRARIAN_TOKEN, "/api/v1/loans", &["K"], &loan(&first_book)).await;
    replayed.ok(201);
    assert_eq!(replayed.headers["idempotent-replayed"], "true");
    assert_eq!(replayed.body, created.body);
    assert_eq!(replayed_location.as_deref(), Some(location.as_str()));
    let loans: i64 = sqlx::query_scalar("select count(*) from loan")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(loans, 2);
}

#[tokio::test]
async fn two_idempotency_keys_in_one_request_are_a_bad_request() {
    let app = spawn_app().await;
    let member = app.create_member("Ada Lovelace", "ada@example.org").await;
    let before = app.row_counts().await;
    let (reply, _) = post_keyed(
        &app,
        LIBRARIAN_TOKEN,
        &format!("/api/v1/members/{}/payments", member["id"]),
        &["first", "second"],
        &json!({ "amount_cents": 100 }),
    )
    .await;
    assert!(
        reply.problem(400)["detail"]
            .as_str()
            .unwrap()
            .contains("Idempotency-Key")
    );
    assert_eq!(app.row_counts().await, before);
}

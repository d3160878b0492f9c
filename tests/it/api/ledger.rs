//! `/api/v1/members/{id}/ledger` and `/api/v1/members/{id}/payments`: the member's account.

use serde_json::{Value, json};

use crate::common::fixtures::{date, insert_book, insert_fine, insert_loan, ledger_sum, query_number};
use crate::common::{LIBRARIAN_TOKEN, READER_TOKEN, TestApp, spawn_app};

/// A member owing `amount_cents` through one settled fine (its CHARGE).
async fn member_owing(app: &TestApp, name: &str, amount_cents: i64) -> (i64, i64) {
    let id = app.member_id(name).await;
    let book = insert_book(&app.pool, "Structure and Interpretation of Computer Programs").await;
    let loan = insert_loan(&app.pool, id, book, date("2026-03-01"), date("2026-03-10")).await;
    let fine = insert_fine(&app.pool, loan, date("2026-03-01"), 21, amount_cents, "SETTLED").await;
    (id, fine)
}

fn payments(member_id: i64) -> String {
    format!("/api/v1/members/{member_id}/payments")
}

async fn pay(app: &TestApp, member_id: i64, body: Value) -> crate::common::Reply {
    app.post_as(&payments(member_id), Some(LIBRARIAN_TOKEN), body).await
}

/// A fresh app with Ada, who owes nothing: (app, Ada's id, her payments path, a payment body of
/// `amount_cents`).
async fn ada_paying(amount_cents: i64) -> (TestApp, i64, String, Value) {
    let app = spawn_app().await;
    let ada = app.member_id("Ada").await;
    (app, ada, payments(ada), json!({ "amount_cents": amount_cents }))
}

async fn payment_count(app: &TestApp, member_id: i64) -> i64 {
    let payments = "select count(*) from ledger_entry where member_id = $1 and kind = 'PAYMENT'";
    query_number(&app.pool, payments, member_id).await
}

#[tokio::test]
async fn a_payment_posts_a_negative_entry_and_answers_the_new_balance() {
    let app = spawn_app().await;
    let (ada, _) = member_owing(&app, "Ada", 1050).await;

    let reply = pay(&app, ada, json!({"amount_cents": 400})).await;
    let entry = reply.ok(201);
    assert!(entry["id"].is_i64());
    assert_eq!(entry["member_id"], ada);
    assert!(entry["fine_id"].is_null());
    assert_eq!(entry["kind"], "PAYMENT");
    assert_eq!(entry["amount_cents"], -400);
    assert!(entry["created_at"].as_str().unwrap().ends_with('Z'));
    assert_eq!(entry["balance_cents"], 650);
    assert_eq!(app.balance(ada).await, 650);

    // Paying off exactly, then overpaying: the balance becomes a credit.
    assert_eq!(
        pay(&app, ada, json!({"amount_cents": 650})).await.ok(201)["balance_cents"],
        0
    );
    assert_eq!(
        pay(&app, ada, json!({"amount_cents": 1})).await.ok(201)["balance_cents"],
        -1
    );
    assert_eq!(app.balance(ada).await, -1);
    assert_eq!(ledger_sum(&app.pool, ada).await, -1);

    // A member who owes nothing may pay in advance; the largest amount is accepted.
    let bob = app.member_id("Bob").await;
    let reply = pay(&app, bob, json!({"amount_cents": 10_000_000_000_i64})).await;
    assert_eq!(reply.ok(201)["balance_cents"], -10_000_000_000_i64);
    assert_eq!(app.balance(ada).await, -1, "another member's payment is not Ada's");
}

#[tokio::test]
async fn the_ledger_lists_a_members_entries_oldest_first() {
    let app = spawn_app().await;
    let (ada, fine) = member_owing(&app, "Ada", 1050).await;
    let (bob, _) = member_owing(&app, "Bob", 300).await;
    let payment = pay(&app, ada, json!({"amount_cents": 50})).await.ok(201).clone();
    pay(&app, bob, json!({"amount_cents": 70})).await.ok(201);

    let reply = app
        .get_as(&format!("/api/v1/members/{ada}/ledger"), Some(READER_TOKEN))
        .await;
    let page = reply.ok(200);
    let items = page["items"].as_array().unwrap();
    assert_eq!(items.len(), 2);
    assert_eq!(items[0]["kind"], "CHARGE");
    assert_eq!(items[0]["fine_id"], fine);
    assert_eq!(items[0]["amount_cents"], 1050);
    assert_eq!(items[0]["member_id"], ada);
    assert_eq!(items[1]["id"], payment["id"]);
    assert_eq!(items[1]["kind"], "PAYMENT");
    assert_eq!(items[1]["amount_cents"], -50);
    assert!(page["next_cursor"].is_null());
    let sum: i64 = items.iter().map(|e| e["amount_cents"].as_i64().unwrap()).sum();
    assert_eq!(sum, app.balance(ada).await, "the balance is the sum of the ledger");

    let carol = app.member_id("Carol").await;
    let empty = app.get(&format!("/api/v1/members/{carol}/ledger")).await;
    assert_eq!(empty.ok(200)["items"], json!([]));
    assert!(empty.body["next_cursor"].is_null());
}

#[tokio::test]
async fn the_ledger_is_paginated() {
    let app = spawn_app().await;
    let ada = app.member_id("Ada").await;
    let mut posted = Vec::new();
    for amount in 1..=5 {
        posted.push(pay(&app, ada, json!({"amount_cents": amount})).await.ok(201)["id"].clone());
    }
    let first = app.get(&format!("/api/v1/members/{ada}/ledger?limit=2")).await;
    let first = first.ok(200);
    assert_eq!(first["items"].as_array().unwrap().len(), 2);
    let mut seen: Vec<Value> = first["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].clone())
        .collect();
    let mut cursor = first["next_cursor"].as_str().unwrap().to_owned();
    loop {
        let reply = app
            .get(&format!("/api/v1/members/{ada}/ledger?limit=2&cursor={cursor}"))
            .await;
        let page = reply.ok(200);
        seen.extend(page["items"].as_array().unwrap().iter().map(|e| e["id"].clone()));
        match page["next_cursor"].as_str() {
            Some(next) => cursor = next.to_owned(),
            None => break,
        }
    }
    assert_eq!(seen, posted);

    let path = format!("/api/v1/members/{ada}/ledger");
    assert_eq!(app.get(&format!("{path}?limit=0")).await.invalid_fields(), ["limit"]);
    assert_eq!(app.get(&format!("{path}?limit=501")).await.invalid_fields(), ["limit"]);
    assert_eq!(
        app.get(&format!("{path}?cursor=zzz")).await.invalid_fields(),
        ["cursor"]
    );
    app.get(&format!("{path}?limit=abc")).await.problem(400);
}

/// The ledger is one statement that also tells an unknown member (404) from a known one: a
/// known member whose entries all lie before the cursor gets an empty page, not a 404.
#[tokio::test]
async fn a_cursor_past_a_members_last_entry_is_an_empty_page() {
    let app = spawn_app().await;
    let bob = app.member_id("Bob").await;
    pay(&app, bob, json!({"amount_cents": 10})).await.ok(201);
    let ada = app.member_id("Ada").await;
    pay(&app, ada, json!({"amount_cents": 20})).await.ok(201);
    pay(&app, ada, json!({"amount_cents": 30})).await.ok(201);
    // A cursor after Ada's first entry, later than every entry of Bob's.
    let first = app.get(&format!("/api/v1/members/{ada}/ledger?limit=1")).await;
    let cursor = first.ok(200)["next_cursor"].as_str().unwrap().to_owned();

    let reply = app.get(&format!("/api/v1/members/{bob}/ledger?cursor={cursor}")).await;
    assert_eq!(reply.ok(200)["items"], json!([]));
    assert!(reply.body["next_cursor"].is_null());
    let reply = app.get(&format!("/api/v1/members/999999/ledger?cursor={cursor}")).await;
    assert_eq!(reply.problem(404)["code"], "not_found");
}

#[tokio::test]
async fn the_ledger_of_an_unknown_member_is_404() {
    let app = spawn_app().await;
    let unknown = app.get("/api/v1/members/999999/ledger").await;
    unknown.problem_code(404, "not_found");
    app.get("/api/v1/members/abc/ledger").await.problem(400);
    app.get_as("/api/v1/members/1/ledger", None).await.problem(401);
}

#[tokio::test]
async fn payment_amounts_are_validated_and_change_nothing() {
    let app = spawn_app().await;
    let (ada, _) = member_owing(&app, "Ada", 1050).await;
    let path = payments(ada);
    let before = app.row_counts().await;

    for body in [
        json!({"amount_cents": 0}),
        json!({"amount_cents": -500}),
        json!({"amount_cents": 10_000_000_001_i64}),
        json!({"amount_cents": i64::MAX}),
        json!({"amount_cents": i64::MIN}),
        json!({"amount_cents": u64::MAX}),
        json!({"amount_cents": 12.5}),
        json!({"amount_cents": 1e3}),
        json!({"amount_cents": "100"}),
        json!({"amount_cents": null}),
        json!({"amount_cents": [100]}),
    ] {
        let reply = pay(&app, ada, body.clone()).await;
        assert_eq!(reply.invalid_fields(), ["amount_cents"], "{body}: {}", reply.body);
    }
    // A number beyond any integer type, written out.
    let huge = r#"{"amount_cents": 100000000000000000000000000000}"#;
    let huge = app.post_text(&path, "application/json", huge).await;
    assert_eq!(huge.invalid_fields(), ["amount_cents"], "{}", huge.body);
    assert_eq!(pay(&app, ada, json!({})).await.invalid_fields(), ["amount_cents"]);
    assert!(
        !pay(&app, ada, json!({"amount_cents": 100, "currency": "EUR"}))
            .await
            .invalid_fields()
            .is_empty()
    );
    app.assert_bad_bodies_refused(&path, "{\"amount_cents\": ", "100").await;
    let malformed_id = app.post_as(
        "/api/v1/members/abc/payments",
        Some(LIBRARIAN_TOKEN),
        json!({"amount_cents": 1}),
    );
    malformed_id.await.problem(400);

    assert_eq!(app.row_counts().await, before);
    assert_eq!(app.balance(ada).await, 1050);
}

#[tokio::test]
async fn payments_need_a_librarian_and_a_known_member() {
    let (app, _, path, body) = ada_paying(100).await;
    let before = app.row_counts().await;

    app.post_as(&path, None, body.clone()).await.problem(401);
    let wrong = app.post_as(&path, Some("not-a-real-token"), body.clone());
    wrong.await.problem(401);
    let reader = app.post_as(&path, Some(READER_TOKEN), body.clone());
    reader.await.problem_code(403, "forbidden");
    let unknown = pay(&app, 999_999, body.clone()).await;
    unknown.problem_code(404, "not_found");
    // With a key, too: the refused request leaves no claim behind.
    let keyed = app
        .post_with_key("/api/v1/members/999999/payments", "key-for-nobody", body.clone())
        .await;
    keyed.problem(404);
    let bad_key = app
        .client
        .post(format!("{}{path}", app.address))
        .bearer_auth(LIBRARIAN_TOKEN)
        .header("idempotency-key", "")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(bad_key.status(), 422);

    assert_eq!(app.row_counts().await, before);
}

#[tokio::test]
async fn a_retried_payment_with_the_same_key_is_posted_once() {
    let app = spawn_app().await;
    let (ada, _) = member_owing(&app, "Ada", 1050).await;
    let path = payments(ada);
    let body = json!({"amount_cents": 500});

    let first = app.post_with_key(&path, "payment-2026-03-31-ada", body.clone()).await;
    let first_body = first.ok(201).clone();
    assert_eq!(first_body["balance_cents"], 550);
    assert!(first.headers.get("idempotent-replayed").is_none());
    let after_first = app.row_counts().await;

    let retry = app.post_with_key(&path, "payment-2026-03-31-ada", body.clone()).await;
    assert_eq!(retry.ok(201), &first_body, "the retry answers the first response");
    assert_eq!(retry.headers["idempotent-replayed"], "true");
    assert_eq!(app.row_counts().await, after_first);
    assert_eq!(payment_count(&app, ada).await, 1);
    assert_eq!(app.balance(ada).await, 550);

    let other_body = app
        .post_with_key(&path, "payment-2026-03-31-ada", json!({"amount_cents": 600}))
        .await;
    assert_eq!(other_body.invalid_fields(), ["Idempotency-Key"]);
    assert_eq!(app.row_counts().await, after_first);

    // A new key is a new payment.
    let second = app.post_with_key(&path, "payment-2026-04-01-ada", body.clone()).await;
    assert_eq!(second.ok(201)["balance_cents"], 50);
    assert_eq!(payment_count(&app, ada).await, 2);
}

#[tokio::test]
async fn concurrent_retries_with_one_key_post_one_payment() {
    let (app, ada, path, body) = ada_paying(250).await;
    let (a, b, c) = tokio::join!(
        app.post_with_key(&path, "same-key", body.clone()),
        app.post_with_key(&path, "same-key", body.clone()),
        app.post_with_key(&path, "same-key", body.clone()),
    );
    for reply in [&a, &b, &c] {
        assert_eq!(reply.ok(201)["id"], a.body["id"]);
        assert_eq!(reply.body["balance_cents"], -250);
    }
    assert_eq!(payment_count(&app, ada).await, 1);
}

#[tokio::test]
async fn concurrent_payments_of_one_member_each_see_the_balance_after_them() {
    let app = spawn_app().await;
    let (ada, _) = member_owing(&app, "Ada", 1000).await;
    let (a, b) = tokio::join!(
        pay(&app, ada, json!({"amount_cents": 100})),
        pay(&app, ada, json!({"amount_cents": 300})),
    );
    let mut balances = [
        a.ok(201)["balance_cents"].as_i64().unwrap(),
        b.ok(201)["balance_cents"].as_i64().unwrap(),
    ];
    balances.sort_unstable();
    // One ran first and saw 900 or 700; the other saw both: 600.
    assert_eq!(balances[0], 600);
    assert!([700, 900].contains(&balances[1]), "{balances:?}");
    assert_eq!(app.balance(ada).await, 600);
}

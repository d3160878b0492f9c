use chrono::{DateTime, Days, NaiveDate, Utc};
use reqwest::Method;
use serde_json::{Value, json};

use crate::common::{LIBRARIAN_TOKEN, READER_TOKEN, Reply, TestApp, spawn_app};

/// A member and `books` book copies; returns their ids.
async fn member_and_books(app: &TestApp, email: &str, books: usize) -> (i64, Vec<i64>) {
    let member = app.create_member("Ada", email).await;
    let mut ids = Vec::new();
    for i in 0..books {
        ids.push(app.create_book(&format!("Book {i}")).await["id"].as_i64().unwrap());
    }
    (member["id"].as_i64().unwrap(), ids)
}

/// A fresh app with Ada (`ada@example.org`) and `books` book copies: (app, Ada's id, the books'
/// ids, today's business date).
async fn lending_desk(books: usize) -> (TestApp, i64, Vec<i64>, NaiveDate) {
    let app = spawn_app().await;
    let (member_id, books) = member_and_books(&app, "ada@example.org", books).await;
    let today = app.today().await;
    (app, member_id, books, today)
}

/// Lends `book_id` to `member_id` from `borrowed_ago` days before `today` until `due_ago` days
/// before it (0: due today); returns the loan.
async fn lend_days_ago(
    app: &TestApp,
    member_id: i64,
    book_id: i64,
    today: NaiveDate,
    borrowed_ago: u64,
    due_ago: u64,
) -> Value {
    let (borrowed_on, due_on) = (days_before(today, borrowed_ago), days_before(today, due_ago));
    app.create_loan_from(member_id, book_id, borrowed_on, due_on).await
}

fn days_before(d: NaiveDate, n: u64) -> NaiveDate {
    d.checked_sub_days(Days::new(n)).unwrap()
}

fn days_after(d: NaiveDate, n: u64) -> NaiveDate {
    d.checked_add_days(Days::new(n)).unwrap()
}

async fn list(app: &TestApp, query: &str) -> Reply {
    app.get(&format!("/api/v1/loans{query}")).await
}

fn id(value: &Value) -> i64 {
    value["id"].as_i64().unwrap()
}

#[tokio::test]
async fn lend_then_get_a_loan_borrowed_today() {
    let (app, member_id, books, _) = lending_desk(1).await;
    let today_before = app.today().await;
    let due_on = days_after(today_before, 14);
    let body = json!({"member_id": member_id, "book_id": books[0], "due_on": due_on});
    let reply = app.post_as("/api/v1/loans", Some(LIBRARIAN_TOKEN), body).await;
    let today_after = app.today().await;
    let loan = reply.ok(201).clone();
    let borrowed_on: NaiveDate = loan["borrowed_on"].as_str().unwrap().parse().unwrap();
    assert!(borrowed_on == today_before || borrowed_on == today_after, "{loan}");
    assert_eq!(loan["due_on"], due_on.to_string());
    assert_eq!(loan["member_id"], member_id);
    assert_eq!(loan["book_id"], books[0]);
    assert_eq!(loan["daily_fine_cents"], app.settings.daily_fine_cents);
    assert!(loan["returned_at"].is_null() && loan["returned_on"].is_null());
    assert_eq!(loan["status"], "open");
    assert_eq!(
        reply.headers["location"],
        format!("/api/v1/loans/{}", id(&loan)).as_str()
    );

    let fetched = app
        .get_as(&format!("/api/v1/loans/{}", id(&loan)), Some(READER_TOKEN))
        .await;
    assert_eq!(fetched.ok(200), &loan);
}

#[tokio::test]
async fn a_past_loan_past_its_due_date_is_overdue() {
    let (app, member_id, books, today) = lending_desk(2).await;
    let loan = lend_days_ago(&app, member_id, books[0], today, 20, 5).await;
    assert_eq!(loan["borrowed_on"], days_before(today, 20).to_string());
    assert_eq!(loan["status"], "overdue");
    // Due today is not overdue yet: the first overdue day is the day after due_on.
    let loan = lend_days_ago(&app, member_id, books[1], today, 3, 0).await;
    assert_eq!(loan["status"], "open");
}

#[tokio::test]
async fn bad_dates_and_fields_are_named_and_nothing_is_written() {
    let (app, member_id, books, _) = lending_desk(1).await;
    let book_id = books[0];
    let today = app.today().await;
    let tomorrow = days_after(today, 1).to_string();
    let yesterday = days_before(today, 1).to_string();
    let due = days_after(today, 7).to_string();
    let before = app.row_counts().await;
    let cases = [
        (
            json!({"member_id": member_id, "book_id": book_id, "due_on": "2025-02-30"}),
            vec!["due_on"],
        ),
        (
            json!({"member_id": member_id, "book_id": book_id, "due_on": "2025/03/01"}),
            vec!["due_on"],
        ),
        (
            json!({"member_id": member_id, "book_id": book_id, "due_on": "2025-3-1"}),
            vec!["due_on"],
        ),
        (
            json!({"member_id": member_id, "book_id": book_id, "due_on": "+20250-03-01"}),
            vec!["due_on"],
        ),
        (
            json!({"member_id": member_id, "book_id": book_id, "due_on": 20250301}),
            vec!["due_on"],
        ),
        (json!({"member_id": member_id, "book_id": book_id}), vec!["due_on"]),
        (
            json!({"member_id": member_id, "book_id": book_id, "borrowed_on": "today", "due_on": due}),
            vec!["borrowed_on"],
        ),
        // In the future.
        (
            json!({"member_id": member_id, "book_id": book_id, "borrowed_on": tomorrow, "due_on": due}),
            vec!["borrowed_on"],
        ),
        // Due before borrowed, explicitly and by the default borrowed_on (today).
        (
            json!({"member_id": member_id, "book_id": book_id, "borrowed_on": today, "due_on": yesterday}),
            vec!["due_on"],
        ),
        (
            json!({"member_id": member_id, "book_id": book_id, "due_on": yesterday}),
            vec!["due_on"],
        ),
        (
            json!({"member_id": "1", "book_id": book_id, "due_on": due}),
            vec!["member_id"],
        ),
        (
            json!({"member_id": member_id, "book_id": 1.5, "due_on": due}),
            vec!["book_id"],
        ),
        (
            json!({"member_id": member_id + 1000, "book_id": book_id, "due_on": due}),
            vec!["member_id"],
        ),
        (
            json!({"member_id": member_id, "book_id": -4, "due_on": due}),
            vec!["book_id"],
        ),
    ];
    for (body, expected) in cases {
        let fields = app.post_loan(&body).await.sorted_invalid_fields();
        assert_eq!(fields, expected, "{body}");
    }
    let unknown_field = json!({"member_id": member_id, "book_id": book_id, "due_on": due, "fine": 0});
    app.post_loan(&unknown_field).await.problem(422);
    app.assert_bad_bodies_refused("/api/v1/loans", "{\"member_id\": 1,", "hello")
        .await;
    assert_eq!(app.row_counts().await, before);
}

#[tokio::test]
async fn writes_need_a_librarian_token() {
    let (app, member_id, books, today) = lending_desk(2).await;
    let loan = app.create_loan(member_id, books[0], today).await;
    let body = json!({"member_id": member_id, "book_id": books[1], "due_on": today});
    let before = app.row_counts().await;

    let reader = app.post_as("/api/v1/loans", Some(READER_TOKEN), body.clone());
    reader.await.problem_code(403, "forbidden");
    app.post_as("/api/v1/loans", None, body).await.problem(401);
    let return_path = format!("/api/v1/loans/{}/return", id(&loan));
    let reader_return = app.post_as(&return_path, Some(READER_TOKEN), json!({}));
    reader_return.await.problem(403);
    app.request(Method::POST, &return_path, Some("not-a-token-0123456789"), None)
        .await
        .problem(401);
    app.get_as("/api/v1/loans", None).await.problem(401);

    assert_eq!(app.row_counts().await, before);
    assert_eq!(
        app.get(&format!("/api/v1/loans/{}", id(&loan))).await.ok(200)["status"],
        "open"
    );
    app.get_as("/api/v1/loans", Some(READER_TOKEN)).await.ok(200);
}

#[tokio::test]
async fn a_lent_book_cannot_be_lent_again_until_returned() {
    let (app, member_id, books, _) = lending_desk(1).await;
    let other = id(&app.create_member("Grace", "grace@example.org").await);
    let today = app.today().await;
    let loan = app.create_loan(member_id, books[0], today).await;
    let before = app.row_counts().await;
    let reply = app
        .post(
            "/api/v1/loans",
            json!({"member_id": other, "book_id": books[0], "due_on": today}),
        )
        .await;
    assert_eq!(reply.problem(409)["code"], "book_already_lent");
    assert_eq!(app.row_counts().await, before);

    app.return_loan(id(&loan)).await;
    let again = app.create_loan(other, books[0], today).await;
    assert_eq!(again["member_id"], other);
}

#[tokio::test]
async fn two_concurrent_loans_of_one_book_lend_it_once() {
    let (app, first, books, _) = lending_desk(1).await;
    let second = id(&app.create_member("Grace", "grace@example.org").await);
    let due = days_after(app.today().await, 7);
    let (a, b) = tokio::join!(
        app.post(
            "/api/v1/loans",
            json!({"member_id": first, "book_id": books[0], "due_on": due})
        ),
        app.post(
            "/api/v1/loans",
            json!({"member_id": second, "book_id": books[0], "due_on": due})
        ),
    );
    let mut statuses = [a.status.as_u16(), b.status.as_u16()];
    statuses.sort_unstable();
    assert_eq!(statuses, [201, 409], "{} / {}", a.body, b.body);
    let refused = if a.status == 409 { &a } else { &b };
    assert_eq!(refused.problem(409)["code"], "book_already_lent");
    let loans = app.get("/api/v1/loans").await;
    assert_eq!(loans.ok(200)["items"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn an_idempotent_retry_returns_the_first_loan() {
    let (app, member_id, books, _) = lending_desk(2).await;
    let due = days_after(app.today().await, 7);
    let body = json!({"member_id": member_id, "book_id": books[0], "due_on": due});

    let first = app.post_with_key("/api/v1/loans", "key-1", body.clone()).await;
    let loan = first.ok(201).clone();
    let after_first = app.row_counts().await;
    let retry = app.post_with_key("/api/v1/loans", "key-1", body.clone()).await;
    assert_eq!(retry.ok(201), &loan);
    assert_eq!(retry.headers["idempotent-replayed"], "true");
    assert_eq!(app.row_counts().await, after_first);

    // The same key with another body is refused, and lends nothing.
    let other = json!({"member_id": member_id, "book_id": books[1], "due_on": due});
    let reply = app.post_with_key("/api/v1/loans", "key-1", other.clone()).await;
    assert_eq!(reply.invalid_fields(), ["Idempotency-Key"]);
    assert_eq!(app.row_counts().await, after_first);
    // A fresh key lends the other book.
    app.post_with_key("/api/v1/loans", "key-2", other).await.ok(201);
}

#[tokio::test]
async fn concurrent_retries_with_one_key_lend_once() {
    let (app, member_id, books, _) = lending_desk(1).await;
    let body = json!({"member_id": member_id, "book_id": books[0], "due_on": app.today().await});
    let (a, b) = tokio::join!(
        app.post_with_key("/api/v1/loans", "same-key", body.clone()),
        app.post_with_key("/api/v1/loans", "same-key", body.clone()),
    );
    assert_eq!(a.ok(201), b.ok(201));
    let loans = app.get("/api/v1/loans").await;
    assert_eq!(loans.ok(200)["items"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn a_failed_keyed_request_can_be_retried() {
    let (app, member_id, books, today) = lending_desk(1).await;
    let blocker = app.create_loan(member_id, books[0], today).await;
    let body = json!({"member_id": member_id, "book_id": books[0], "due_on": today});
    let before = app.row_counts().await;
    let reply = app.post_with_key("/api/v1/loans", "k", body.clone()).await;
    reply.problem(409);
    // Nothing was stored for the key: once the book is back, the same retry lends it.
    assert_eq!(app.row_counts().await, before);
    app.return_loan(id(&blocker)).await;
    app.post_with_key("/api/v1/loans", "k", body).await.ok(201);
}

#[tokio::test]
async fn return_now_then_twice() {
    let (app, member_id, books, _) = lending_desk(1).await;
    let loan = app.create_loan(member_id, books[0], app.today().await).await;
    let path = format!("/api/v1/loans/{}/return", id(&loan));

    // No body at all is fine: the book is back now.
    let reply = app.request(Method::POST, &path, Some(LIBRARIAN_TOKEN), None).await;
    let returned = reply.ok(200).clone();
    assert_eq!(returned["status"], "returned");
    let returned_at: DateTime<Utc> = returned["returned_at"].as_str().unwrap().parse().unwrap();
    let local = returned_at.with_timezone(&app.settings.business_tz).date_naive();
    assert_eq!(returned["returned_on"], local.to_string());

    let before = app.row_counts().await;
    let again = app.post(&path, json!({})).await;
    assert_eq!(again.problem(409)["code"], "loan_already_returned");
    assert_eq!(app.row_counts().await, before);
    let fetched = app.get(&format!("/api/v1/loans/{}", id(&loan))).await;
    assert_eq!(fetched.ok(200), &returned, "the second return changed nothing");
}

#[tokio::test]
async fn a_return_body_may_be_empty_null_or_without_returned_at() {
    let (app, member_id, books, today) = lending_desk(3).await;
    let mut paths = Vec::new();
    for book_id in books {
        let loan = app.create_loan(member_id, book_id, today).await;
        paths.push(format!("/api/v1/loans/{}/return", id(&loan)));
    }
    let empty = app.post_text(&paths[0], "application/json", "").await;
    assert_eq!(empty.ok(200)["status"], "returned");
    let null = app.post_text(&paths[1], "application/json", "null").await;
    assert_eq!(null.ok(200)["status"], "returned");
    let no_instant = app.post(&paths[2], json!({"returned_at": null})).await;
    assert_eq!(no_instant.ok(200)["status"], "returned");
}

#[tokio::test]
async fn a_past_return_gets_the_business_date_of_its_instant() {
    let (app, member_id, books, today) = lending_desk(1).await;
    let loan = lend_days_ago(&app, member_id, books[0], today, 10, 6).await;
    // 20:00 UTC is already the next day in Shanghai (UTC+8), the default business zone.
    let instant = format!("{}T20:00:00Z", days_before(today, 4));
    let reply = app
        .post(
            &format!("/api/v1/loans/{}/return", id(&loan)),
            json!({"returned_at": instant}),
        )
        .await;
    let returned = reply.ok(200);
    assert_eq!(returned["returned_at"], instant);
    assert_eq!(returned["returned_on"], days_before(today, 3).to_string());
    assert_eq!(returned["status"], "returned");
}

#[tokio::test]
async fn bad_returns_are_refused_and_change_nothing() {
    let (app, member_id, books, today) = lending_desk(1).await;
    let loan = lend_days_ago(&app, member_id, books[0], today, 2, 0).await;
    let path = format!("/api/v1/loans/{}/return", id(&loan));
    let before = app.row_counts().await;

    let future = (Utc::now() + chrono::Duration::days(2)).to_rfc3339();
    let before_borrowed = format!("{}T00:00:00+08:00", days_before(today, 3));
    for returned_at in [
        json!(future),
        json!(before_borrowed),
        json!("yesterday"),
        json!("2025-03-01"),
        json!(5),
    ] {
        let reply = app.post(&path, json!({"returned_at": returned_at})).await;
        assert_eq!(reply.invalid_fields(), ["returned_at"], "{returned_at}");
    }
    app.post(&path, json!({"returned": true})).await.problem(422);
    app.assert_bad_bodies_refused(&path, "{", "{}").await;
    assert_eq!(
        app.post("/api/v1/loans/999999/return", json!({})).await.problem(404)["code"],
        "not_found"
    );
    app.post("/api/v1/loans/abc/return", json!({})).await.problem(400);

    assert_eq!(app.row_counts().await, before);
    assert_eq!(
        app.get(&format!("/api/v1/loans/{}", id(&loan))).await.ok(200)["status"],
        "open"
    );
}

#[tokio::test]
async fn two_concurrent_returns_return_once() {
    let (app, member_id, books, _) = lending_desk(1).await;
    let loan = app.create_loan(member_id, books[0], app.today().await).await;
    let path = format!("/api/v1/loans/{}/return", id(&loan));
    let (a, b) = tokio::join!(app.post(&path, json!({})), app.post(&path, json!({})));
    let mut statuses = [a.status.as_u16(), b.status.as_u16()];
    statuses.sort_unstable();
    assert_eq!(statuses, [200, 409], "{} / {}", a.body, b.body);
}

#[tokio::test]
async fn get_unknown_and_malformed_loans() {
    let app = spawn_app().await;
    assert_eq!(app.get("/api/v1/loans/999999").await.problem(404)["code"], "not_found");
    app.get("/api/v1/loans/abc").await.problem(400);
}

#[tokio::test]
async fn loans_are_listed_by_member_and_status_and_paginated() {
    let (app, ada, books, _) = lending_desk(4).await;
    let grace = id(&app.create_member("Grace", "grace@example.org").await);
    let today = app.today().await;
    let open = app.create_loan(ada, books[0], days_after(today, 7)).await;
    let overdue = lend_days_ago(&app, ada, books[1], today, 20, 1).await;
    let returned = app.create_loan(ada, books[2], today).await;
    app.return_loan(id(&returned)).await;
    let graces = app.create_loan(grace, books[3], today).await;

    let ids = |reply: &Reply| -> Vec<i64> { reply.ok(200)["items"].as_array().unwrap().iter().map(id).collect() };
    assert_eq!(
        ids(&list(&app, "").await),
        [id(&open), id(&overdue), id(&returned), id(&graces)]
    );
    assert_eq!(ids(&list(&app, "?status=open").await), [id(&open), id(&graces)]);
    assert_eq!(ids(&list(&app, "?status=overdue").await), [id(&overdue)]);
    assert_eq!(ids(&list(&app, "?status=returned").await), [id(&returned)]);
    assert_eq!(
        ids(&list(&app, &format!("?member_id={ada}")).await),
        [id(&open), id(&overdue), id(&returned)]
    );
    assert_eq!(
        ids(&list(&app, &format!("?member_id={ada}&status=open")).await),
        [id(&open)]
    );
    assert_eq!(
        ids(&list(&app, &format!("?member_id={grace}&status=overdue")).await),
        Vec::<i64>::new()
    );
    assert_eq!(ids(&list(&app, "?member_id=999999").await), Vec::<i64>::new());
    let items = list(&app, "?status=overdue").await;
    assert_eq!(items.ok(200)["items"][0]["status"], "overdue");

    // Walk Ada's loans one page at a time.
    let mut seen = Vec::new();
    let mut cursor = String::new();
    loop {
        let page = list(&app, &format!("?member_id={ada}&limit=1&cursor={cursor}")).await;
        seen.extend(ids(&page));
        match page.body["next_cursor"].as_str() {
            Some(next) => cursor = next.to_owned(),
            None => break,
        }
    }
    assert_eq!(seen, [id(&open), id(&overdue), id(&returned)]);

    list(&app, "?status=lost").await.problem(400);
    list(&app, "?member_id=abc").await.problem(400);
    list(&app, "?limit=0").await.invalid_fields();
    list(&app, "?limit=501").await.invalid_fields();
    list(&app, "?cursor=42").await.invalid_fields();
}

//! `/api/v1/fines`: list, get, void. Loans and fines are inserted with SQL (see
//! `common::fixtures`), as the loans API and the settlement job would create them.

use serde_json::{Value, json};

use crate::common::fixtures::{
    FIXTURE_FENCING_TOKEN, date, insert_book, insert_fine, insert_loan, ledger_entries_of_fine, ledger_sum,
};
use crate::common::{LIBRARIAN_TOKEN, READER_TOKEN, TestApp, spawn_app};

/// A loan of a new book to `member_id`, due on 2026-03-10.
async fn lend(app: &TestApp, member_id: i64) -> i64 {
    let book = insert_book(&app.pool, "The Art of Computer Programming").await;
    insert_loan(&app.pool, member_id, book, date("2026-03-01"), date("2026-03-10")).await
}

/// A fresh app where Ada has one loan (see [`lend`]) with a March 2026 fine of `overdue_days`,
/// `amount_cents` and `status`: (app, Ada's id, the loan's id, the fine's id).
async fn ada_fined(overdue_days: i32, amount_cents: i64, status: &str) -> (TestApp, i64, i64, i64) {
    let app = spawn_app().await;
    let ada = app.member_id("Ada").await;
    let loan = lend(&app, ada).await;
    let fine = insert_fine(&app.pool, loan, date("2026-03-01"), overdue_days, amount_cents, status).await;
    (app, ada, loan, fine)
}

async fn void(app: &TestApp, fine_id: i64, reason: &str) -> crate::common::Reply {
    let path = format!("/api/v1/fines/{fine_id}/void");
    app.post_as(&path, Some(LIBRARIAN_TOKEN), json!({ "reason": reason }))
        .await
}

async fn get_fine(app: &TestApp, fine_id: i64) -> crate::common::Reply {
    app.get(&format!("/api/v1/fines/{fine_id}")).await
}

fn ids(page: &Value) -> Vec<i64> {
    page["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|f| f["id"].as_i64().unwrap())
        .collect()
}

#[tokio::test]
async fn a_fine_is_read_with_every_field() {
    let (app, ada, loan, fine) = ada_fined(21, 1050, "SETTLED").await;

    let reply = app.get_as(&format!("/api/v1/fines/{fine}"), Some(READER_TOKEN)).await;
    let body = reply.ok(200);
    assert_eq!(body["id"], fine);
    assert_eq!(body["loan_id"], loan);
    assert_eq!(body["member_id"], ada);
    assert_eq!(body["settle_month"], "2026-03-01");
    assert_eq!(body["overdue_days"], 21);
    assert_eq!(body["amount_cents"], 1050);
    assert_eq!(body["accrued_through"], "2026-03-31");
    assert_eq!(body["status"], "SETTLED");
    assert!(body["settled_at"].as_str().unwrap().ends_with('Z'));
    assert_eq!(body["fencing_token"], FIXTURE_FENCING_TOKEN);
    assert!(body["voided_at"].is_null() && body["void_reason"].is_null());
}

#[tokio::test]
async fn unknown_and_malformed_fine_ids() {
    let app = spawn_app().await;
    get_fine(&app, 999_999).await.problem_code(404, "not_found");
    app.get("/api/v1/fines/abc").await.problem(400);
    let before = app.row_counts().await;
    void(&app, 999_999, "typo").await.problem_code(404, "not_found");
    let malformed = app.post_as(
        "/api/v1/fines/abc/void",
        Some(LIBRARIAN_TOKEN),
        json!({"reason": "typo"}),
    );
    malformed.await.problem(400);
    assert_eq!(app.row_counts().await, before);
}

#[tokio::test]
async fn fines_are_filtered_by_member_loan_status_and_month() {
    let app = spawn_app().await;
    let (ada, bob) = (app.member_id("Ada").await, app.member_id("Bob").await);
    let (ada_loan, ada_other_loan, bob_loan) = (lend(&app, ada).await, lend(&app, ada).await, lend(&app, bob).await);
    let march = date("2026-03-01");
    let april = date("2026-04-01");
    let a1 = insert_fine(&app.pool, ada_loan, march, 21, 1050, "SETTLED").await;
    let a2 = insert_fine(&app.pool, ada_loan, april, 5, 250, "PENDING").await;
    let a3 = insert_fine(&app.pool, ada_other_loan, march, 21, 1050, "VOID").await;
    let b1 = insert_fine(&app.pool, bob_loan, march, 21, 1050, "PENDING").await;
    let b2 = insert_fine(&app.pool, bob_loan, april, 5, 250, "SETTLED").await;

    let list = |query: String| {
        let app = &app;
        async move { ids(app.get(&format!("/api/v1/fines{query}")).await.ok(200)) }
    };
    assert_eq!(list(String::new()).await, [a1, a2, a3, b1, b2]);
    assert_eq!(list(format!("?member_id={ada}")).await, [a1, a2, a3]);
    assert_eq!(list(format!("?loan_id={bob_loan}")).await, [b1, b2]);
    assert_eq!(list("?status=PENDING".into()).await, [a2, b1]);
    assert_eq!(list("?status=settled".into()).await, [a1, b2], "case is ignored");
    assert_eq!(list("?settle_month=2026-03-01".into()).await, [a1, a3, b1]);
    assert_eq!(
        list(format!("?member_id={ada}&status=VOID&settle_month=2026-03-01")).await,
        [a3]
    );
    assert_eq!(list(format!("?member_id={ada}&loan_id={ada_loan}")).await, [a1, a2]);
    assert_eq!(list(format!("?loan_id={ada_loan}&status=PENDING")).await, [a2]);
    assert_eq!(
        list(format!("?member_id={bob}&loan_id={ada_loan}")).await,
        Vec::<i64>::new()
    );
    assert_eq!(list("?member_id=999999".into()).await, Vec::<i64>::new());
    assert_eq!(list("?settle_month=2026-05-01".into()).await, Vec::<i64>::new());
}

#[tokio::test]
async fn fines_are_paginated_with_filters_kept() {
    let app = spawn_app().await;
    let (ada, bob) = (app.member_id("Ada").await, app.member_id("Bob").await);
    let mut ada_fines = Vec::new();
    for _ in 0..5 {
        let loan = lend(&app, ada).await;
        ada_fines.push(insert_fine(&app.pool, loan, date("2026-03-01"), 21, 1050, "PENDING").await);
        let loan = lend(&app, bob).await;
        insert_fine(&app.pool, loan, date("2026-03-01"), 21, 1050, "PENDING").await;
    }

    let mut seen = Vec::new();
    let mut cursor = String::new();
    loop {
        let reply = app
            .get(&format!("/api/v1/fines?member_id={ada}&limit=2&cursor={cursor}"))
            .await;
        let page = reply.ok(200);
        let page_ids = ids(page);
        assert!(page_ids.len() <= 2);
        seen.extend(page_ids);
        match page["next_cursor"].as_str() {
            Some(next) => cursor = next.to_owned(),
            None => break,
        }
    }
    assert_eq!(seen, ada_fines);

    let all = app.get("/api/v1/fines?limit=500").await;
    assert_eq!(ids(all.ok(200)).len(), 10);
    assert!(all.body["next_cursor"].is_null());
}

#[tokio::test]
async fn list_filters_are_validated() {
    let app = spawn_app().await;
    assert_eq!(app.get("/api/v1/fines?status=PAID").await.invalid_fields(), ["status"]);
    assert_eq!(app.get("/api/v1/fines?status=").await.invalid_fields(), ["status"]);
    assert_eq!(
        app.get("/api/v1/fines?settle_month=2026-03-15").await.invalid_fields(),
        ["settle_month"]
    );
    assert_eq!(app.get("/api/v1/fines?limit=0").await.invalid_fields(), ["limit"]);
    assert_eq!(app.get("/api/v1/fines?limit=501").await.invalid_fields(), ["limit"]);
    assert_eq!(app.get("/api/v1/fines?cursor=zzz").await.invalid_fields(), ["cursor"]);
    app.get("/api/v1/fines?settle_month=2026-13-01").await.problem(400);
    app.get("/api/v1/fines?settle_month=March").await.problem(400);
    app.get("/api/v1/fines?member_id=abc").await.problem(400);
    app.get("/api/v1/fines?loan_id=1.5").await.problem(400);
    app.get("/api/v1/fines?limit=abc").await.problem(400);
}

#[tokio::test]
async fn reads_need_a_token_and_any_role_may_read() {
    let app = spawn_app().await;
    app.get_as("/api/v1/fines", None).await.problem(401);
    app.get_as("/api/v1/fines", Some("not-a-real-token")).await.problem(401);
    app.get_as("/api/v1/fines", Some(READER_TOKEN)).await.ok(200);
}

#[tokio::test]
async fn voiding_a_pending_fine_posts_nothing() {
    let (app, ada, _, fine) = ada_fined(4, 200, "PENDING").await;
    let before = app.row_counts().await;

    let reply = void(&app, fine, "  returned the book on time, scanner fault  ").await;
    let body = reply.ok(200);
    assert_eq!(body["id"], fine);
    assert_eq!(body["status"], "VOID");
    assert_eq!(body["void_reason"], "returned the book on time, scanner fault");
    assert!(body["voided_at"].as_str().unwrap().ends_with('Z'));
    assert!(body["settled_at"].is_null());
    assert_eq!(body["amount_cents"], 200, "the amount stays as history");
    assert_eq!(body["fencing_token"], FIXTURE_FENCING_TOKEN);

    assert_eq!(get_fine(&app, fine).await.ok(200), body);
    assert_eq!(
        app.row_counts().await,
        before,
        "no ledger entry for a fine never charged"
    );
    assert_eq!(ledger_sum(&app.pool, ada).await, 0);
}

#[tokio::test]
async fn voiding_a_settled_fine_posts_one_reversal_and_lowers_the_balance() {
    let (app, ada, loan, kept) = ada_fined(21, 1050, "SETTLED").await;
    let voided = insert_fine(&app.pool, loan, date("2026-04-01"), 6, 300, "SETTLED").await;
    assert_eq!(app.balance(ada).await, 1350);

    let reply = void(&app, voided, "waived by the head librarian").await;
    assert_eq!(reply.ok(200)["status"], "VOID");
    assert!(reply.body["settled_at"].is_string(), "settled_at stays as history");

    assert_eq!(ledger_entries_of_fine(&app.pool, voided, "REVERSAL").await, 1);
    assert_eq!(ledger_entries_of_fine(&app.pool, kept, "REVERSAL").await, 0);
    assert_eq!(app.balance(ada).await, 1050);
    assert_eq!(ledger_sum(&app.pool, ada).await, 1050);
    let ledger = app.get(&format!("/api/v1/members/{ada}/ledger")).await;
    let reversal = &ledger.ok(200)["items"][2];
    assert_eq!(reversal["kind"], "REVERSAL");
    assert_eq!(reversal["fine_id"], voided);
    assert_eq!(reversal["amount_cents"], -300);
}

#[tokio::test]
async fn voiding_twice_is_409_and_posts_nothing() {
    let (app, _, loan, fine) = ada_fined(21, 1050, "SETTLED").await;
    let first = void(&app, fine, "waived").await;
    let voided = first.ok(200).clone();
    let before = app.row_counts().await;

    let again = void(&app, fine, "waived again").await;
    again.problem_code(409, "fine_already_void");
    assert_eq!(app.row_counts().await, before);
    assert_eq!(ledger_entries_of_fine(&app.pool, fine, "REVERSAL").await, 1);
    assert_eq!(get_fine(&app, fine).await.ok(200), &voided);

    // A fine that was voided before it was ever settled is just as final.
    let pending_then_void = insert_fine(&app.pool, loan, date("2026-04-01"), 3, 150, "VOID").await;
    let before = app.row_counts().await;
    let again = void(&app, pending_then_void, "again").await;
    again.problem_code(409, "fine_already_void");
    assert_eq!(app.row_counts().await, before);
}

#[tokio::test]
async fn concurrent_voids_succeed_once_and_post_exactly_one_reversal() {
    let (app, ada, _, fine) = ada_fined(21, 1050, "SETTLED").await;

    let (a, b) = tokio::join!(void(&app, fine, "first desk"), void(&app, fine, "second desk"));
    let mut statuses = [a.status.as_u16(), b.status.as_u16()];
    statuses.sort_unstable();
    assert_eq!(statuses, [200, 409], "a: {}, b: {}", a.body, b.body);
    let loser = if a.status == 409 { &a } else { &b };
    loser.problem_code(409, "fine_already_void");

    assert_eq!(ledger_entries_of_fine(&app.pool, fine, "REVERSAL").await, 1);
    assert_eq!(ledger_sum(&app.pool, ada).await, 0);
}

#[tokio::test]
async fn void_requests_are_validated_and_change_nothing() {
    let (app, _, _, fine) = ada_fined(21, 1050, "SETTLED").await;
    let path = format!("/api/v1/fines/{fine}/void");
    let fine_before = get_fine(&app, fine).await.ok(200).clone();
    let before = app.row_counts().await;

    for body in [
        json!({"reason": ""}),
        json!({"reason": "   "}),
        json!({"reason": "x".repeat(501)}),
        json!({"reason": "lost\0"}),
        json!({"reason": 42}),
        json!({"reason": null}),
        json!({}),
        json!({"reason": "ok", "amount_cents": 0}),
    ] {
        let reply = app.post_as(&path, Some(LIBRARIAN_TOKEN), body.clone()).await;
        let fields = reply.invalid_fields();
        assert!(!fields.is_empty(), "{body}: {}", reply.body);
    }
    let empty = app.post_as(&path, Some(LIBRARIAN_TOKEN), json!({"reason": ""})).await;
    assert_eq!(empty.invalid_fields(), ["reason"]);
    app.assert_bad_bodies_refused(&path, "{\"reason\": ", "waived").await;
    app.post_as(&path, None, json!({"reason": "waived"})).await.problem(401);
    let reader = app.post_as(&path, Some(READER_TOKEN), json!({"reason": "waived"}));
    reader.await.problem_code(403, "forbidden");

    assert_eq!(app.row_counts().await, before);
    assert_eq!(get_fine(&app, fine).await.ok(200), &fine_before);
    assert_eq!(ledger_entries_of_fine(&app.pool, fine, "REVERSAL").await, 0);

    // The bounds themselves are accepted: 500 characters, counted as characters, not bytes.
    let reply = void(&app, fine, &"é".repeat(500)).await;
    assert_eq!(reply.ok(200)["void_reason"].as_str().unwrap().chars().count(), 500);
}

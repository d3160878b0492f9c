//! Case 9: names, titles and reasons need a visible character; e-mail addresses follow the HTML
//! `input type=email` rule.

use serde_json::json;

use crate::common::spawn_app;

#[tokio::test]
async fn invisible_names_and_malformed_e_mails_are_refused() {
    let app = spawn_app().await;
    for name in ["\u{200b}", "\u{202e}", "\u{200b}\u{202e}\u{feff}", "\u{3164}"] {
        let reply = app
            .post("/api/v1/members", json!({ "name": name, "email": "ada@example.org" }))
            .await;
        assert_eq!(reply.invalid_fields(), ["name"], "{name:?}");
    }
    for email in ["a@b..c", "a@.b", "a@-b.c", "a b@c.d", "a@b_c.d"] {
        let reply = app
            .post("/api/v1/members", json!({ "name": "Ada", "email": email }))
            .await;
        assert_eq!(reply.invalid_fields(), ["email"], "{email}");
    }
    let reply = app.post("/api/v1/books", json!({ "title": "\u{200b}\u{200b}" })).await;
    assert_eq!(reply.invalid_fields(), ["title"]);
    assert_eq!(
        app.row_counts().await.iter().map(|(_, n)| n).sum::<i64>(),
        0,
        "nothing was created"
    );
}

#[tokio::test]
async fn a_void_reason_needs_a_visible_character() {
    let app = spawn_app().await;
    let member = app.create_member("Ada Lovelace", "ada@example.org").await;
    let book = app.create_book("Notes").await;
    let loan_id = crate::common::fixtures::insert_loan(
        &app.pool,
        member["id"].as_i64().unwrap(),
        book["id"].as_i64().unwrap(),
        crate::common::fixtures::date("2026-03-01"),
        crate::common::fixtures::date("2026-03-05"),
    )
    .await;
    let march = crate::common::fixtures::date("2026-03-01");
    let fine_id = crate::common::fixtures::insert_fine(&app.pool, loan_id, march, 10, 500, "PENDING").await;
    let reply = app
        .post(
            &format!("/api/v1/fines/{fine_id}/void"),
            json!({ "reason": "\u{200b}\u{202e}" }),
        )
        .await;
    assert_eq!(reply.invalid_fields(), ["reason"]);
    let status: String = sqlx::query_scalar("select status from fine_record where id = $1")
        .bind(fine_id)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(status, "PENDING");
}

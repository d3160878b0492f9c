//! `GET /api/v1/members/{id}/notifications`.

use finesettle::reminders::ReminderKind::{DueTomorrow, Overdue};
use reqwest::Method;

use crate::common::READER_TOKEN;
use crate::reminders::support::{harness, harness_with_loan, minutes};

#[tokio::test]
async fn a_members_notifications_are_listed_oldest_first_page_by_page() {
    let (h, due_on, first) = harness_with_loan(4).await;
    let second = h.lend(due_on).await;
    // Another member's reminder is not theirs to see.
    let other = h.app.create_member("Bob", "bob@example.org").await["id"]
        .as_i64()
        .unwrap();
    let book = h.app.create_book("Emma").await["id"].as_i64().unwrap();
    h.app.create_loan(other, book, due_on).await;
    h.drain(h.at(DueTomorrow, due_on, minutes(1))).await;
    let overdue_at = h.at(Overdue, due_on, minutes(1));
    h.drain(overdue_at).await;

    let path = format!("/api/v1/members/{}/notifications", h.member_id);
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let query = cursor.as_deref().map(|c| format!("&cursor={c}")).unwrap_or_default();
        let reply = h
            .app
            .request(Method::GET, &format!("{path}?limit=3{query}"), Some(READER_TOKEN), None)
            .await;
        let page = reply.ok(200).clone();
        seen.extend(page["items"].as_array().unwrap().iter().cloned());
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    let summary: Vec<(i64, &str)> = seen
        .iter()
        .map(|n| (n["loan_id"].as_i64().unwrap(), n["kind"].as_str().unwrap()))
        .collect();
    assert_eq!(
        summary,
        [
            (first, "DUE_TOMORROW"),
            (second, "DUE_TOMORROW"),
            (first, "OVERDUE"),
            (second, "OVERDUE")
        ]
    );
    let last = seen.last().unwrap();
    assert_eq!(last["member_id"], h.member_id);
    assert!(last["id"].is_i64());
    assert_eq!(
        last["sent_at"]
            .as_str()
            .unwrap()
            .parse::<chrono::DateTime<chrono::Utc>>()
            .unwrap(),
        overdue_at
    );
    assert!(last["sent_at"].as_str().unwrap().ends_with('Z'));
    let ids: Vec<i64> = seen.iter().map(|n| n["id"].as_i64().unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "oldest first: {ids:?}");
}

#[tokio::test]
async fn bad_requests_for_notifications() {
    let h = harness().await;
    let path = format!("/api/v1/members/{}/notifications", h.member_id);
    let empty = h.app.get(&path).await;
    assert_eq!(empty.ok(200)["items"], serde_json::json!([]));
    assert!(empty.body["next_cursor"].is_null());

    assert_eq!(
        h.app.get("/api/v1/members/999999/notifications").await.problem(404)["code"],
        "not_found"
    );
    h.app.get("/api/v1/members/abc/notifications").await.problem(400);
    assert_eq!(h.app.get(&format!("{path}?limit=0")).await.invalid_fields(), ["limit"]);
    assert_eq!(
        h.app.get(&format!("{path}?cursor=42")).await.invalid_fields(),
        ["cursor"]
    );
    h.app.request(Method::GET, &path, None, None).await.problem(401);
}

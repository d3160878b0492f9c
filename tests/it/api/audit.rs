//! `POST /api/v1/jobs/{name}/audits`: the audit of an ended month, for admins only.

use std::time::Duration;

use chrono::{Datelike, Days, NaiveDate};
use reqwest::Method;
use serde_json::{Value, json};

use crate::common::checks::eventually;
use crate::common::{LIBRARIAN_TOKEN, READER_TOKEN, TestApp, spawn_app};

const AUDITS: &str = "/api/v1/jobs/settle-fines/audits";

/// The first day of the month before `today`'s.
fn last_month(today: NaiveDate) -> NaiveDate {
    (today.with_day(1).unwrap() - Days::new(1)).with_day(1).unwrap()
}

/// Backfills `from..=to` through the API and waits until every date has its SUCCESS.
async fn settle(app: &TestApp, from: NaiveDate, to: NaiveDate) {
    let started = app
        .post("/api/v1/jobs/settle-fines/backfill", json!({ "from": from, "to": to }))
        .await;
    let dates = started.ok(202)["dates"].as_array().unwrap().len();
    let backfill = format!("the backfill of {from}..{to} to finish");
    eventually(&backfill, Duration::from_secs(30), async || {
        let page = app.get("/api/v1/jobs/settle-fines/executions?limit=500").await;
        let done = page.ok(200)["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["status"] == "SUCCESS")
            .count();
        done == dates
    })
    .await;
}

#[tokio::test]
async fn an_admin_audits_an_ended_month_and_a_difference_raises_the_alert() {
    // No start date configured: the backfill's first date is recorded as the start date.
    let app = spawn_app().await;
    let month = last_month(app.today().await);
    let last_day = app.today().await.with_day(1).unwrap() - Days::new(1);
    // One loan, due on the 5th and still out: every later day of the month is owed.
    let member = app.create_member("Ada", "ada@example.org").await;
    let book = app.create_book("Notes").await;
    let loan = app
        .create_loan_from(
            member["id"].as_i64().unwrap(),
            book["id"].as_i64().unwrap(),
            month,
            month + Days::new(4),
        )
        .await;
    settle(&app, month, last_day).await;

    let label = format!("{:04}-{:02}", month.year(), month.month());
    let body = app.post(AUDITS, json!({ "month": label })).await.ok(200).clone();
    let owed = i64::from(last_day.day() - 5) * 50;
    assert_eq!(body["month"], label.as_str());
    assert_eq!(body["fines_checked"], 1, "{body}");
    assert_eq!(
        (body["expected_cents"].as_i64(), body["settled_cents"].as_i64()),
        (Some(owed), Some(owed))
    );
    assert_eq!(body["differences_total"], 0, "{body}");
    assert_eq!(body["differences"], json!([]));
    assert!(body["alert"].is_null());

    // The CHARGE goes missing: the audit says which loan, and raises AUDIT for the month.
    sqlx::query("delete from ledger_entry where kind = 'CHARGE'")
        .execute(&app.pool)
        .await
        .unwrap();
    let body = app.post(AUDITS, json!({ "month": label })).await.ok(200).clone();
    assert_eq!(body["differences_total"], 1, "{body}");
    let difference = &body["differences"][0];
    assert_eq!(difference["loan_id"], loan["id"]);
    assert_eq!(difference["reason"], "missing_charge");
    assert_eq!(difference["stored_cents"], owed);
    assert!(difference["charged_cents"].is_null());
    assert_eq!(body["alert"]["kind"], "AUDIT");
    assert_eq!(body["alert"]["business_date"], month.to_string());
    let alerts = app.get("/api/v1/alerts").await;
    let listed: Vec<Value> = alerts.ok(200)["items"].as_array().unwrap().clone();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["id"], body["alert"]["id"]);
    assert!(
        listed[0]["detail"]
            .as_str()
            .unwrap()
            .contains(&format!("in loan {};", loan["id"])),
        "{}",
        listed[0]
    );
}

#[tokio::test]
async fn audits_are_for_admins_of_ended_months_with_a_valid_month() {
    let app = spawn_app().await;
    let before = app.row_counts().await;
    let today = app.today().await;
    let this_month = format!("{:04}-{:02}", today.year(), today.month());

    for token in [LIBRARIAN_TOKEN, READER_TOKEN] {
        app.request(Method::POST, AUDITS, Some(token), Some(json!({ "month": this_month })))
            .await
            .problem(403);
    }
    // Nothing settled yet, and the current month has not ended anyway.
    let problem = app.post(AUDITS, json!({ "month": this_month })).await;
    assert_eq!(problem.problem(409)["code"], "month_not_final");
    assert!(
        problem.body["detail"].as_str().unwrap().contains("is not final"),
        "{}",
        problem.body
    );
    for bad in [
        json!({ "month": "2026-3" }),
        json!({ "month": "2026-13" }),
        json!({ "month": "2026-03-01" }),
        json!({ "month": 202603 }),
        json!({}),
    ] {
        assert_eq!(app.post(AUDITS, bad.clone()).await.invalid_fields(), ["month"], "{bad}");
    }
    assert_eq!(
        app.post(AUDITS, json!({ "month": "2026-03", "extra": 1 }))
            .await
            .problem(422)["code"],
        "invalid_fields"
    );
    app.post("/api/v1/jobs/nope/audits", json!({ "month": "2026-03" }))
        .await
        .problem(404);
    assert_eq!(app.row_counts().await, before);
}

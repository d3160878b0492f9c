//! `GET /api/v1/alerts`: the state filter, pagination, and bad queries.

use reqwest::Method;
use serde_json::Value;

use crate::common::{READER_TOKEN, TestApp, spawn_app};

async fn arrange(app: &TestApp) {
    sqlx::query(
        "insert into alert (kind, task_name, business_date, state, resolved_at, detail, execution_id) values
             ('MISSED',  'settle-fines', '2026-06-01', 'RESOLVED', now(), 'no SUCCESS by ...', null),
             ('MISSED',  'settle-fines', '2026-06-02', 'ACTIVE',   null,  'no SUCCESS by ...', null),
             ('MISSED',  'settle-fines', '2026-06-03', 'RESOLVED', now(), 'no SUCCESS by ...', null),
             ('MISSED',  'settle-fines', '2026-06-04', 'ACTIVE',   null,  'no SUCCESS by ...', null),
             ('MISSED',  'settle-fines', '2026-06-05', 'ACTIVE',   null,  'no SUCCESS by ...', null)",
    )
    .execute(&app.pool)
    .await
    .unwrap();
}

async fn list(app: &TestApp, query: &str) -> Value {
    app.request(Method::GET, &format!("/api/v1/alerts{query}"), Some(READER_TOKEN), None)
        .await
        .ok(200)
        .clone()
}

fn dates(page: &Value) -> Vec<String> {
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["business_date"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn active_alerts_by_default_newest_first() {
    let app = spawn_app().await;
    arrange(&app).await;
    let page = list(&app, "").await;
    assert_eq!(dates(&page), ["2026-06-05", "2026-06-04", "2026-06-02"]);
    assert!(page["next_cursor"].is_null());
    let alert = &page["items"][0];
    for field in [
        "id",
        "kind",
        "task_name",
        "business_date",
        "state",
        "raised_at",
        "resolved_at",
        "detail",
    ] {
        assert!(alert.get(field).is_some(), "{field} missing from {alert}");
    }
    assert_eq!(alert["kind"], "MISSED");
    assert_eq!(alert["state"], "ACTIVE");
    assert_eq!(alert["task_name"], "settle-fines");
    assert!(alert["raised_at"].as_str().unwrap().ends_with('Z'));
    assert!(alert["resolved_at"].is_null());
    assert_eq!(list(&app, "?state=active").await, page);
}

#[tokio::test]
async fn resolved_and_all_are_paginated() {
    let app = spawn_app().await;
    arrange(&app).await;
    let resolved = list(&app, "?state=resolved").await;
    assert_eq!(dates(&resolved), ["2026-06-03", "2026-06-01"]);
    assert!(
        resolved["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a["state"] == "RESOLVED" && a["resolved_at"].is_string())
    );

    let mut seen = Vec::new();
    let mut query = "?state=all&limit=2".to_owned();
    loop {
        let page = list(&app, &query).await;
        assert!(page["items"].as_array().unwrap().len() <= 2);
        seen.extend(dates(&page));
        match page["next_cursor"].as_str() {
            Some(cursor) => query = format!("?state=all&limit=2&cursor={cursor}"),
            None => break,
        }
    }
    assert_eq!(
        seen,
        ["2026-06-05", "2026-06-04", "2026-06-03", "2026-06-02", "2026-06-01"]
    );
}

#[tokio::test]
async fn bad_queries_are_refused() {
    let app = spawn_app().await;
    assert_eq!(app.get("/api/v1/alerts?state=open").await.invalid_fields(), ["state"]);
    assert_eq!(app.get("/api/v1/alerts?state=ACTIVE").await.invalid_fields(), ["state"]);
    assert_eq!(app.get("/api/v1/alerts?limit=0").await.invalid_fields(), ["limit"]);
    assert_eq!(app.get("/api/v1/alerts?cursor=zzz").await.invalid_fields(), ["cursor"]);
    app.get("/api/v1/alerts?limit=ten").await.problem(400);
    app.request(Method::GET, "/api/v1/alerts", None, None)
        .await
        .problem(401);
}

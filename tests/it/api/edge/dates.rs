//! Case 1: dates in a query string are read as strictly as in a body, and no date is a 5xx.
//! Case 9 (last part): a job date centuries back is refused, not recorded SUCCESS.

use serde_json::json;

use crate::common::{READER_TOKEN, spawn_app};

/// The settlement job's runs, posted as an admin (`TestApp::post`).
const RUNS: &str = "/api/v1/jobs/settle-fines/runs";

#[tokio::test]
async fn query_dates_are_yyyy_mm_dd_within_what_the_database_stores() {
    let app = spawn_app().await;
    for bad in [
        "-5000-01-01",
        "0000-01-01",
        "+262142-01-01",
        "2026-1-01",
        "2026-02-30",
        "10000-01-01",
    ] {
        let path = format!("/api/v1/fines?settle_month={}", urlencoding(bad));
        let reply = app.get_as(&path, Some(READER_TOKEN)).await;
        let problem = reply.problem(400);
        assert!(
            problem["detail"].as_str().unwrap().contains("settle_month"),
            "{bad}: {problem}"
        );
    }
    let valid = app.get_as("/api/v1/fines?settle_month=2026-03-01", Some(READER_TOKEN));
    valid.await.ok(200);
}

#[tokio::test]
async fn a_run_of_a_date_centuries_back_is_refused_and_records_nothing() {
    let app = spawn_app().await;
    let before = app.row_counts().await;
    let reply = app.post(RUNS, json!({ "business_date": "0001-01-01" })).await;
    assert_eq!(reply.invalid_fields(), ["business_date"], "{}", reply.body);
    assert_eq!(app.row_counts().await, before);
    let start = finesettle::store::start_date::recorded(&app.pool, &"settle-fines".into())
        .await
        .unwrap();
    assert_eq!(start, None, "the refused run recorded no start date");

    // Within ten years, the first run is the job's start, as before.
    let recent = app.today().await - chrono::Days::new(30);
    app.post(RUNS, json!({ "business_date": recent })).await.ok(202);
}

/// `+` must be sent as `%2B` to mean a plus sign in a query string.
fn urlencoding(text: &str) -> String {
    text.replace('+', "%2B")
}

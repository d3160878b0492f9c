//! The page over HTTP: open without a token, every section there, every value escaped.

use chrono::NaiveDate;

use crate::common::{TestApp, spawn_app, spawn_app_with};
use crate::dashboard::support::{assert_fine_totals_shown, dashboard, seed_small, settle};

/// Raises an alert of `kind` for `settle-fines` on `date` with `detail` (text from elsewhere:
/// the job's error, a webhook's answer), for `execution` if any.
async fn insert_alert(app: &TestApp, kind: &str, date: NaiveDate, detail: &str, execution: Option<i64>) {
    sqlx::query(
        "insert into alert (kind, task_name, business_date, detail, execution_id) values ($1, 'settle-fines', $2, $3, $4)",
    )
    .bind(kind)
    .bind(date)
    .bind(detail)
    .bind(execution)
    .execute(&app.pool)
    .await
    .unwrap();
}

/// The page, which must answer 200 without a single script tag, whatever text the database holds.
async fn page_without_a_script_tag(app: &TestApp) -> String {
    let (status, _, body) = dashboard(app).await;
    assert_eq!(status, 200);
    assert!(!body.contains("<script"), "an unescaped script tag reached the page");
    body
}

#[tokio::test]
async fn the_page_answers_without_a_token_with_every_section_and_no_script() {
    let app = spawn_app().await;
    let (status, headers, body) = dashboard(&app).await;

    assert_eq!(status, 200);
    assert_eq!(headers["content-type"], "text/html; charset=utf-8");
    assert_eq!(headers["cache-control"], "no-store");
    let policy = headers["content-security-policy"].to_str().unwrap();
    assert!(
        policy.starts_with("default-src 'none'") && !policy.contains("script-src"),
        "{policy}"
    );
    assert!(body.starts_with("<!doctype html>"));
    assert!(body.contains(r#"<meta http-equiv="refresh" content="10">"#));
    for section in ["job", "lock", "alerts", "fines", "reminders", "timeline", "attempts"] {
        assert!(
            body.contains(&format!(r#"id="{section}""#)),
            "section {section} missing"
        );
    }
    // Nothing to run and nothing fetched from elsewhere.
    for forbidden in ["<script", "src=", "<link", "@import"] {
        assert!(!body.contains(forbidden), "the page contains {forbidden}");
    }
    // The schedule, in UTC and in business time (02:00 in Shanghai is 18:00 UTC the day before).
    assert!(body.contains("<code>settle-fines</code>"));
    assert!(body.contains("<code>0 0 2 * * *</code> in Asia/Shanghai"));
    assert_eq!(body.matches("T18:00:00Z</td>").count(), 5, "five next fires in UTC");
    assert_eq!(
        body.matches(" 02:00:00 +08:00</td>").count(),
        5,
        "five next fires in business time"
    );
    assert!(body.contains("Never taken"));
    assert!(body.contains("No execution yet"));
    assert!(body.contains("No active alert"));
    assert!(body.contains("Redis is not configured"));
    assert!(body.contains("Served by <strong>test-replica</strong>"));
}

#[tokio::test]
async fn after_a_run_the_page_shows_the_lock_the_timeline_the_attempt_and_the_fine_totals() {
    // The lock stays taken for ten minutes after the run, however long the run took: the page
    // shows it held.
    let app = spawn_app_with(|s| s.job.lock_at_least_for = std::time::Duration::from_secs(600)).await;
    seed_small(&app).await;
    let yesterday = app.today().await.pred_opt().unwrap();
    let from = yesterday - chrono::Days::new(2);
    settle(&app, from, yesterday).await;

    let (status, _, body) = dashboard(&app).await;
    assert_eq!(status, 200);
    // Held, with its token and lease.
    assert!(
        body.contains(r#"<span class="badge s-held">HELD</span> by <strong>test-replica</strong>, fencing token 1"#)
    );
    assert!(body.contains("Time left"));
    // One bar per execution, in the replica's lane, labelled by business date.
    assert_eq!(body.matches(r#"class="bar s-success""#).count(), 3);
    assert!(body.contains(r#"class="lane-label" "#) && body.contains(">test-replica</text>"));
    for date in from.iter_days().take(3) {
        assert!(
            body.contains(&format!(">{}</text>", date.format("%m-%d"))),
            "no bar labelled {date}"
        );
    }
    assert!(body.contains(r#"<span class="badge s-won">WON</span>"#));
    assert!(body.contains(&format!("<dt>Last settled date</dt><dd>{yesterday}</dd>")));
    assert_fine_totals_shown(&app, &body).await;
}

#[tokio::test]
async fn every_value_is_escaped_even_a_hostile_instance_id_and_alert_detail() {
    let hostile = r#"<script>alert("x")</script>"#;
    let app = spawn_app_with(|s| s.instance_id = hostile.to_owned()).await;
    seed_small(&app).await;
    let yesterday = app.today().await.pred_opt().unwrap();
    settle(&app, yesterday, yesterday).await;
    let detail = "<img src=x onerror=alert(1)> deadline passed";
    insert_alert(&app, "MISSED", yesterday, detail, None).await;

    let body = page_without_a_script_tag(&app).await;
    assert!(!body.contains("<img"), "an unescaped image tag reached the page");
    let escaped = "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;";
    // The header, the lock holder, the timeline lane and bar title, the attempt, the execution.
    assert!(body.matches(escaped).count() >= 5, "{}", body.matches(escaped).count());
    assert!(body.contains("&lt;img src=x onerror=alert(1)&gt; deadline passed"));
    assert!(body.contains(r#"<span class="badge s-failed">MISSED</span>"#));
}

#[tokio::test]
async fn markup_in_an_execution_error_and_an_alert_detail_is_shown_as_text() {
    // Both carry text from elsewhere (a database error message, a webhook's answer): whatever
    // it holds must read as text, never become markup, in a table cell or a bar's hover title.
    let hostile = r#"<script>alert(1)</script> it's "quoted" & more"#;
    let escaped = "&lt;script&gt;alert(1)&lt;/script&gt; it's &quot;quoted&quot; &amp; more";
    let app = spawn_app().await;
    let yesterday = app.today().await.pred_opt().unwrap();
    let (execution,): (i64,) = sqlx::query_as(
        "insert into task_execution (task_name, business_date, trigger, instance_id, fencing_token, finished_at, status, error) \
         values ('settle-fines', $1, 'manual', 'test-replica', 1, now(), 'FAILED', $2) returning id",
    )
    .bind(yesterday)
    .bind(hostile)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    insert_alert(&app, "FAILED", yesterday, hostile, Some(execution)).await;

    let body = page_without_a_script_tag(&app).await;
    assert!(!body.contains(hostile), "the raw text reached the page");
    // The alert's detail and the execution's error, each in its cell.
    let cell = format!(r#"<td class="wrap">{escaped}</td>"#);
    assert_eq!(body.matches(&cell).count(), 2, "{body}");
    // The bar's hover title ends with the error.
    assert!(body.contains(&format!(": {escaped}</title>")), "{body}");
}

#[tokio::test]
async fn when_the_database_does_not_answer_the_page_says_so_and_keeps_refreshing() {
    let app = spawn_app().await;
    // The application's pool is this one: closed, every query fails at once.
    app.pool.close().await;
    let (status, headers, body) = dashboard(&app).await;
    assert_eq!(status, 503);
    assert_eq!(headers["content-type"], "text/html; charset=utf-8");
    assert!(body.contains("Database unavailable"));
    assert!(body.contains(r#"<meta http-equiv="refresh" content="10">"#));
}

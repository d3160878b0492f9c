//! A little library and a few settled dates, so that the page has something to show.

use std::time::Duration;

use chrono::NaiveDate;
use finesettle::seed::{Policy, SeedOptions, seed};
use indicatif::ProgressBar;
use serde_json::json;

use crate::common::TestApp;

const JOB: &str = "/api/v1/jobs/settle-fines";

/// 30 members, 200 copies, 300 loans over the last 40 days.
pub async fn seed_small(app: &TestApp) {
    let options = SeedOptions {
        members: 30,
        books: 200,
        loans: 300,
        days_back: 40,
        ..SeedOptions::default()
    };
    let policy = Policy {
        business_tz: app.settings.business_tz,
        daily_fine_cents: app.settings.daily_fine_cents,
    };
    seed(&app.pool, policy, &options, &ProgressBar::hidden())
        .await
        .expect("seed");
}

/// Settles `from..=to` through the API on `app` (retrying while another replica still holds the
/// lock) and waits until every execution has finished.
pub async fn settle(app: &TestApp, from: NaiveDate, to: NaiveDate) {
    let body = json!({ "from": from, "to": to });
    let mut started = false;
    for _ in 0..200 {
        let reply = app.post(&format!("{JOB}/backfill"), body.clone()).await;
        if reply.status.as_u16() == 202 {
            started = true;
            break;
        }
        assert_eq!(reply.problem(409)["code"], "lock_held", "{}", reply.body);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(started, "the backfill never got the lock");
    let days = (to - from).num_days() + 1;
    for _ in 0..600 {
        let items = app.get(&format!("{JOB}/executions?limit=500")).await.ok(200)["items"].clone();
        let items = items.as_array().unwrap();
        let of_range = items.iter().filter(|e| {
            let date: NaiveDate = e["business_date"].as_str().unwrap().parse().unwrap();
            (from..=to).contains(&date) && e["status"] != "RUNNING"
        });
        if of_range.count() as i64 >= days {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the executions from {from} to {to} did not finish");
}

/// The page, fetched without any token.
pub async fn dashboard(app: &TestApp) -> (u16, reqwest::header::HeaderMap, String) {
    let response = app.client.get(format!("{}/", app.address)).send().await.expect("GET /");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    (status, headers, response.text().await.expect("a text body"))
}

/// `123456` cents as the page shows them: `1,234.56`.
fn money(cents: i64) -> String {
    let units = (cents / 100).to_string();
    let mut grouped = String::new();
    for (i, c) in units.chars().enumerate() {
        if i > 0 && (units.len() - i).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(c);
    }
    format!("{grouped}.{:02}", cents % 100)
}

/// Asserts that `page` shows the count and sum of the PENDING and of the SETTLED fines as the
/// table has them, and that some fines are PENDING.
pub async fn assert_fine_totals_shown(app: &TestApp, page: &str) {
    for status in ["PENDING", "SETTLED"] {
        let (count, cents) = fine_total(app, status).await;
        if status == "PENDING" {
            assert!(count > 0, "the seeded loans owe fines");
        }
        let row = format!(
            r#"{status}</span></td><td class="num">{count}</td><td class="num">{}</td>"#,
            money(cents)
        );
        assert!(page.contains(&row), "no row {row}");
    }
}

/// Count and sum of the fines of `status`, straight from the table.
async fn fine_total(app: &TestApp, status: &str) -> (i64, i64) {
    sqlx::query_as("select count(*), coalesce(sum(amount_cents), 0)::bigint from fine_record where status = $1")
        .bind(status)
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

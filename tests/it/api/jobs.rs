//! The admin view of the settlement job: schedule, manual runs, backfills, executions, attempts,
//! locks.

use std::time::Duration;

use chrono::NaiveDate;
use reqwest::Method;
use serde_json::{Value, json};

use crate::common::checks::poll_until;
use crate::common::{LIBRARIAN_TOKEN, TestApp, spawn_app, spawn_app_with};

const JOB: &str = "/api/v1/jobs/settle-fines";

/// Polls the executions list until the execution `id` is no longer RUNNING.
async fn finished_execution(app: &TestApp, id: i64) -> Value {
    poll_until(
        &format!("execution {id} to finish"),
        Duration::from_secs(15),
        async || {
            let page = app.get(&format!("{JOB}/executions?limit=500")).await;
            let found = page.ok(200)["items"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["id"] == id)
                .cloned();
            found.filter(|e| e["status"] != "RUNNING")
        },
    )
    .await
}

async fn yesterday(app: &TestApp) -> NaiveDate {
    app.today().await.pred_opt().unwrap()
}

#[tokio::test]
async fn the_job_shows_its_schedule_in_utc_and_business_time() {
    let app = spawn_app().await;
    let jobs = app.get("/api/v1/jobs").await;
    let job = &jobs.ok(200)["items"][0];
    assert_eq!(job["name"], "settle-fines");
    assert_eq!(job["cron"], "0 0 2 * * *");
    assert_eq!(job["time_zone"], "Asia/Shanghai");
    let fires = job["next_fires"].as_array().unwrap();
    assert_eq!(fires.len(), 5);
    for fire in fires {
        // 02:00 in Shanghai is 18:00 UTC the day before.
        assert!(fire["utc"].as_str().unwrap().ends_with("T18:00:00Z"), "{fire}");
        assert!(
            fire["business"].as_str().unwrap().ends_with("T02:00:00+08:00"),
            "{fire}"
        );
    }
    assert!(job["lock"].is_null() && job["last_execution"].is_null());
    assert_eq!(app.get(JOB).await.ok(200)["name"], "settle-fines");
    assert_eq!(app.get("/api/v1/jobs/nope").await.problem(404)["code"], "not_found");
}

#[tokio::test]
async fn a_manual_run_answers_202_with_the_execution_and_settles_the_date() {
    let app = spawn_app().await;
    let date = yesterday(&app).await;
    let reply = app.post(&format!("{JOB}/runs"), json!({ "business_date": date })).await;
    let execution = reply.ok(202);
    assert_eq!(execution["business_date"], date.to_string());
    assert_eq!(execution["trigger"], "manual");
    assert_eq!(execution["instance_id"], "test-replica");
    let done = finished_execution(&app, execution["id"].as_i64().unwrap()).await;
    assert_eq!(done["status"], "SUCCESS", "{done}");

    // The attempt timeline says who ran it; the lock row shows the holder and its token.
    let attempts = app.get(&format!("{JOB}/attempts")).await;
    let attempt = &attempts.ok(200)["items"][0];
    assert_eq!(attempt["outcome"], "WON");
    assert_eq!(attempt["instance_id"], "test-replica");
    let locks = app.get("/api/v1/locks").await;
    let lock = &locks.ok(200)["items"][0];
    assert_eq!(lock["task_name"], "settle-fines");
    assert_eq!(lock["locked_by"], "test-replica");
    assert_eq!(lock["fencing_token"], execution["fencing_token"]);

    // At most one SUCCESS per date: a second run of the date is refused and changes nothing.
    let before = app.row_counts().await;
    let again = app.post(&format!("{JOB}/runs"), json!({ "business_date": date })).await;
    assert_eq!(again.problem(409)["code"], "already_settled");
    assert_eq!(app.row_counts().await, before);
}

#[tokio::test]
async fn a_run_while_another_replica_holds_the_lock_is_409_and_recorded() {
    let app = spawn_app().await;
    sqlx::query(
        "insert into task_lock (task_name, locked_until, locked_at, locked_by, owner_token, fencing_token)
         values ('settle-fines', now() + interval '10 minutes', now(), 'replica-b', gen_random_uuid(), 4)",
    )
    .execute(&app.pool)
    .await
    .unwrap();
    let date = yesterday(&app).await;
    let reply = app.post(&format!("{JOB}/runs"), json!({ "business_date": date })).await;
    let problem = reply.problem(409);
    assert_eq!(problem["code"], "lock_held");
    assert!(problem["detail"].as_str().unwrap().contains("replica-b"));
    let attempts = app.get(&format!("{JOB}/attempts")).await;
    let attempt = &attempts.ok(200)["items"][0];
    assert_eq!(attempt["outcome"], "HELD");
    assert_eq!(attempt["holder"], "replica-b");
    let executions = app.get(&format!("{JOB}/executions")).await;
    assert!(executions.ok(200)["items"].as_array().unwrap().is_empty());
}

#[tokio::test]
async fn runs_and_backfills_refuse_dates_that_have_not_ended_and_bad_bodies() {
    let app = spawn_app().await;
    let before = app.row_counts().await;
    let today = app.today().await;
    let runs = format!("{JOB}/runs");
    assert_eq!(
        app.post(&runs, json!({ "business_date": today }))
            .await
            .invalid_fields(),
        ["business_date"]
    );
    assert_eq!(
        app.post(&runs, json!({ "business_date": "2026-02-30" }))
            .await
            .invalid_fields(),
        ["business_date"]
    );
    assert_eq!(
        app.post(&runs, json!({ "business_date": 20260101 }))
            .await
            .invalid_fields(),
        ["business_date"]
    );
    assert_eq!(app.post(&runs, json!({})).await.invalid_fields(), ["business_date"]);
    let backfill = format!("{JOB}/backfill");
    let yesterday = today.pred_opt().unwrap();
    assert_eq!(
        app.post(&backfill, json!({ "from": yesterday, "to": today }))
            .await
            .invalid_fields(),
        ["to"]
    );
    assert_eq!(
        app.post(
            &backfill,
            json!({ "from": yesterday, "to": yesterday.pred_opt().unwrap() })
        )
        .await
        .invalid_fields(),
        ["from"]
    );
    let too_far = yesterday - chrono::Days::new(62);
    assert_eq!(
        app.post(&backfill, json!({ "from": too_far, "to": yesterday }))
            .await
            .invalid_fields(),
        ["to"]
    );
    let malformed = app.send_raw(Method::POST, &runs, crate::common::ADMIN_TOKEN, "application/json", "{");
    malformed.await.problem(400);
    app.post("/api/v1/jobs/nope/runs", json!({ "business_date": yesterday }))
        .await
        .problem(404);
    assert_eq!(app.row_counts().await, before);
}

#[tokio::test]
async fn a_backfill_settles_each_date_with_its_own_execution() {
    let app = spawn_app().await;
    let to = yesterday(&app).await;
    let from = to - chrono::Days::new(4);
    let reply = app
        .post(&format!("{JOB}/backfill"), json!({ "from": from, "to": to }))
        .await;
    let started = reply.ok(202);
    assert_eq!(started["dates"].as_array().unwrap().len(), 5);
    let token = started["fencing_token"].as_i64().unwrap();
    let mut settled = Vec::new();
    for _ in 0..300 {
        let page = app.get(&format!("{JOB}/executions?limit=500")).await;
        settled = page.ok(200)["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["status"] == "SUCCESS" && e["fencing_token"] == token)
            .map(|e| e["business_date"].as_str().unwrap().to_owned())
            .collect();
        if settled.len() == 5 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    settled.sort();
    let expected: Vec<String> = from.iter_days().take(5).map(|d| d.to_string()).collect();
    assert_eq!(settled, expected);
}

#[tokio::test]
async fn jobs_and_locks_need_the_admin_role() {
    let app = spawn_app().await;
    for path in ["/api/v1/jobs", JOB, "/api/v1/locks"] {
        app.get_as(path, Some(LIBRARIAN_TOKEN)).await.problem(403);
    }
    let before = app.row_counts().await;
    let date = yesterday(&app).await;
    let runs = format!("{JOB}/runs");
    let run = app.post_as(&runs, Some(LIBRARIAN_TOKEN), json!({ "business_date": date }));
    run.await.problem(403);
    assert_eq!(app.row_counts().await, before);
}

/// Issue 19: an operator's run that meets this replica's own fire is told what that fire is
/// doing. First the fire is taking over an expired lock whose previous holder still has a fenced
/// transaction open (409 `job_starting`), then it is walking its date (409 `job_running`, naming
/// the date and the fencing token). Never a 5xx; once the fire is done, the run is accepted and
/// its date settled.
#[tokio::test]
async fn a_run_meeting_this_replicas_fire_is_told_what_the_fire_is_doing() {
    // No lock_at_least_for: the operator's last run takes the lock right after the fire.
    let app = spawn_app_with(|s| s.job.lock_at_least_for = Duration::ZERO).await;
    let date = yesterday(&app).await;
    let earlier = date.pred_opt().unwrap();
    // An earlier holder's lease has run out, but its date transaction is still open: its fence
    // (a key-share lock on the lock row) makes a takeover wait.
    sqlx::query(
        "insert into task_lock (task_name, locked_until, locked_at, locked_by, owner_token, fencing_token)
         values ('settle-fines', now() - interval '1 second', now() - interval '1 minute', 'replica-b', gen_random_uuid(), 4)",
    )
    .execute(&app.pool)
    .await
    .unwrap();
    let mut previous_holder = app.pool.begin().await.unwrap();
    sqlx::query("select 1 from task_lock where task_name = 'settle-fines' and fencing_token = 4 for key share")
        .execute(&mut *previous_holder)
        .await
        .unwrap();
    // A loan whose fine the walk will wait to write (below).
    let member = app.create_member("Ada", "ada@example.com").await;
    let book = app.create_book("Notes").await;
    app.create_loan_from(
        member["id"].as_i64().unwrap(),
        book["id"].as_i64().unwrap(),
        earlier - chrono::Days::new(20),
        earlier - chrono::Days::new(10),
    )
    .await;

    let job = app.job.clone();
    let fire = tokio::spawn(async move {
        let now = finesettle::store::clock::now(job.pool()).await.unwrap();
        job.fire(
            finesettle::settlement::Trigger::Cron,
            now,
            finesettle::jobs::Request::date(earlier),
        )
        .await
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let reply = app.post(&format!("{JOB}/runs"), json!({ "business_date": date })).await;
    let problem = reply.problem(409);
    assert_eq!(problem["code"], "job_starting", "{problem}");
    assert!(
        problem["detail"].as_str().unwrap().contains("taking the job's lock"),
        "{problem}"
    );

    // The walk's accrual waits to write the loan's fine: another transaction holds the fines'
    // table in SHARE mode (as removing a loan does, migration 20261205000210). A row lock on the
    // loan no longer holds it up: the accrual locks no loan since the foreign keys went.
    let mut writer = app.pool.begin().await.unwrap();
    sqlx::raw_sql("lock table fine_record in share mode")
        .execute(&mut *writer)
        .await
        .unwrap();
    previous_holder.commit().await.unwrap();
    let problem = loop {
        let reply = app.post(&format!("{JOB}/runs"), json!({ "business_date": date })).await;
        let problem = reply.problem(409).clone();
        if problem["code"] == "job_running" {
            break problem;
        }
        assert_eq!(problem["code"], "job_starting", "{problem}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let detail = problem["detail"].as_str().unwrap();
    assert!(
        detail.contains(&format!("1 date(s) from {earlier} to {earlier}")) && detail.contains("fencing token 5"),
        "{problem}"
    );
    writer.commit().await.unwrap();
    let report = fire.await.unwrap().expect("the fire ran");
    assert!(report.walk.completed(), "{report:?}");

    let reply = app.post(&format!("{JOB}/runs"), json!({ "business_date": date })).await;
    let id = reply.ok(202)["id"].as_i64().unwrap();
    assert_eq!(finished_execution(&app, id).await["status"], "SUCCESS");
}

/// Issue 19: a fire whose slot names a date that has not ended by the database's clock (a
/// replica whose clock runs ahead, a clock that jumped) plans through yesterday only, and its
/// attempt says why today was left out.
#[tokio::test]
async fn a_fire_for_a_date_that_has_not_ended_settles_only_ended_dates_and_says_why() {
    let app = spawn_app_with(|s| s.job.lock_at_least_for = Duration::ZERO).await;
    let today = app.today().await;
    let yesterday = today.pred_opt().unwrap();
    let now = finesettle::store::clock::now(&app.pool).await.unwrap();
    let request = finesettle::jobs::Request::CatchUp { target: today };
    let report = app
        .job
        .fire(finesettle::settlement::Trigger::Cron, now, request)
        .await
        .expect("the fire runs the ended dates");
    let settled: Vec<NaiveDate> = report.walk.outcomes.iter().map(|o| o.date).collect();
    assert_eq!(settled, [yesterday], "{report:?}");

    let executions = app.get(&format!("{JOB}/executions")).await;
    let dates: Vec<&str> = executions.ok(200)["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["business_date"].as_str().unwrap())
        .collect();
    assert_eq!(dates, [yesterday.to_string()]);
    let attempts = app.get(&format!("{JOB}/attempts")).await;
    let attempt = &attempts.ok(200)["items"][0];
    assert_eq!(attempt["outcome"], "WON");
    let detail = attempt["detail"].as_str().unwrap();
    assert!(
        detail.contains(&format!("{today} has not ended by the database's clock")),
        "{attempt}"
    );

    // With yesterday settled, the same fire again has nothing it may run, and says why.
    let request = finesettle::jobs::Request::CatchUp { target: today };
    let refused = app
        .job
        .fire(finesettle::settlement::Trigger::Cron, now, request)
        .await
        .unwrap_err();
    assert!(matches!(refused, finesettle::jobs::Refused::NothingToDo), "{refused:?}");
    let attempts = app.get(&format!("{JOB}/attempts")).await;
    let attempt = &attempts.ok(200)["items"][0];
    assert_eq!(attempt["outcome"], "NOTHING_TO_DO");
    assert!(
        attempt["detail"].as_str().unwrap().contains("has not ended"),
        "{attempt}"
    );
}

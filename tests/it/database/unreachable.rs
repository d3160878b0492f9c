//! The database unreachable (a failover's seconds without a primary, a network cut): every
//! request that needs it answers 503 `unavailable` with `Retry-After`, the operator's views of
//! the job and its lock included, never 500; and all of it answers again once it is back.

use std::time::Duration;

use serde_json::json;

use crate::common::checks::eventually;
use crate::common::proxy::DbProxy;
use crate::common::{Reply, spawn_app_with};

fn assert_unavailable(reply: &Reply, what: &str) {
    assert_eq!(reply.status.as_u16(), 503, "{what}: {}", reply.body);
    reply.problem_code(503, "unavailable");
    assert!(
        reply.headers.contains_key("retry-after"),
        "{what}: a 503 says when to retry"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_database_answers_503_everywhere_and_nothing_once_back() {
    let mut proxy = None;
    let app = spawn_app_with(|s| {
        let (through, url) = DbProxy::in_front_of(&s.database_url);
        s.database_url = url;
        proxy = Some(through);
    })
    .await;
    let proxy = proxy.unwrap();
    app.create_member("Ada", "ada@example.org").await;

    proxy.cut();
    let member = json!({ "name": "Grace", "email": "grace@example.org" });
    assert_unavailable(&app.post("/api/v1/members", member.clone()).await, "a write");
    assert_unavailable(&app.get("/api/v1/members").await, "a read");
    assert_unavailable(&app.get("/api/v1/locks").await, "the locks");
    assert_unavailable(&app.get("/api/v1/jobs/settle-fines").await, "the job");
    let ready = app.get("/readyz").await;
    assert_eq!(ready.status.as_u16(), 503);
    assert_eq!(ready.body["database"], "unreachable");

    proxy.restore();
    eventually("the database to answer again", Duration::from_secs(20), async || {
        app.get("/readyz").await.status.as_u16() == 200
    })
    .await;
    app.post("/api/v1/members", member).await.ok(201);
    app.get("/api/v1/locks").await.ok(200);
}

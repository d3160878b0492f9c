//! A node that turns read-only under a running replica (a demoted primary, a proxy pointing at a
//! standby): writes answer 503, readiness answers 503, and both recover by themselves once the
//! database accepts writes again, without a restart.

use std::time::Duration;

use serde_json::json;
use sqlx::{Connection, PgConnection};

use super::alter_database;
use crate::common::checks::eventually;
use crate::common::{Reply, TestApp, spawn_app};

/// Ends every session of the application, as a failover does: the sessions it opens next get the
/// database's defaults of that moment.
async fn end_the_apps_sessions(app: &TestApp) {
    let mut conn = PgConnection::connect(app.database.url()).await.unwrap();
    sqlx::query(
        "select pg_terminate_backend(pid) from pg_stat_activity \
         where datname = current_database() and pid <> pg_backend_pid()",
    )
    .execute(&mut conn)
    .await
    .unwrap();
}

async fn create_member(app: &TestApp, n: u32) -> Reply {
    app.post(
        "/api/v1/members",
        json!({ "name": format!("Member {n}"), "email": format!("m{n}@example.org") }),
    )
    .await
}

fn assert_unavailable(reply: &Reply) {
    let problem = reply.problem_code(503, "unavailable");
    assert!(
        reply.headers.contains_key("retry-after"),
        "a 503 says when to retry: {problem}"
    );
}

#[tokio::test]
async fn a_node_turned_read_only_answers_503_and_is_not_ready_until_it_accepts_writes() {
    let app = spawn_app().await;
    create_member(&app, 0).await.ok(201);
    assert_eq!(app.get("/readyz").await.status.as_u16(), 200);

    alter_database(&app.database, "set default_transaction_read_only = on").await;
    end_the_apps_sessions(&app).await;
    for n in 1..=3 {
        assert_unavailable(&create_member(&app, n).await);
    }
    let ready = app.get("/readyz").await;
    assert_eq!(ready.status.as_u16(), 503, "{:?}", ready.body);
    assert_eq!(ready.body["database"], "read-only");

    // Writable again. The sessions opened meanwhile still default to read-only: the pool must
    // drop them rather than keep answering 503.
    alter_database(&app.database, "reset default_transaction_read_only").await;
    let mut n = 10;
    eventually("writes succeed again", Duration::from_secs(20), async || {
        n += 1;
        let reply = create_member(&app, n).await;
        if reply.status.as_u16() != 201 {
            assert_unavailable(&reply);
        }
        reply.status.as_u16() == 201
    })
    .await;
    eventually("ready again", Duration::from_secs(20), async || {
        app.get("/readyz").await.status.as_u16() == 200
    })
    .await;
}

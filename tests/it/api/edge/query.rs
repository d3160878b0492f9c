//! Case 9 (query part): a query parameter the route does not know is a 400 naming it, not
//! silently ignored (`member_id[]=1` used to answer the unfiltered list).

use reqwest::Method;

use crate::common::{READER_TOKEN, spawn_app};

#[tokio::test]
async fn unknown_query_parameters_are_named_in_a_bad_request() {
    let app = spawn_app().await;
    for (path, unknown) in [
        ("/api/v1/loans?member_id[]=1", "member_id[]"),
        ("/api/v1/loans?member=1&status=open", "member"),
        ("/api/v1/fines?limit=5&colour=red", "colour"),
        ("/api/v1/members?offset=10", "offset"),
        ("/api/v1/alerts?state=all&sort=id", "sort"),
    ] {
        let reply = app.request(Method::GET, path, Some(READER_TOKEN), None).await;
        let detail = reply.problem(400)["detail"].as_str().unwrap().to_owned();
        assert!(detail.contains(unknown), "{path}: {detail}");
    }
    // Known ones still work, page fields included.
    for path in [
        "/api/v1/loans?member_id=1&status=open&limit=5",
        "/api/v1/alerts?state=all&limit=5",
        "/api/v1/fines?settle_month=2026-03-01&limit=5",
    ] {
        app.request(Method::GET, path, Some(READER_TOKEN), None).await.ok(200);
    }
}

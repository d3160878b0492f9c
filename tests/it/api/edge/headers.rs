//! Case 8: responses say how they may be used: no sniffing, no caching, no framing. Case 3 (the
//! rest): the request-head limits answer problem+json.

use reqwest::Method;

use crate::common::{READER_TOKEN, spawn_app};

#[tokio::test]
async fn api_and_problem_responses_are_neither_sniffed_nor_cached() {
    let app = spawn_app().await;
    let member = app.create_member("Ada Lovelace", "ada@example.org").await;
    let ok = app
        .request(
            Method::GET,
            &format!("/api/v1/members/{}", member["id"]),
            Some(READER_TOKEN),
            None,
        )
        .await;
    ok.ok(200);
    let problem = app
        .request(Method::GET, "/api/v1/members/999999", Some(READER_TOKEN), None)
        .await;
    problem.problem(404);
    let unauthorized = app.request(Method::GET, "/api/v1/members", None, None).await;
    unauthorized.problem(401);
    for reply in [&ok, &problem, &unauthorized] {
        assert_eq!(reply.headers["x-content-type-options"], "nosniff", "{:?}", reply.status);
        assert_eq!(reply.headers["cache-control"], "no-store", "{:?}", reply.status);
    }
}

#[tokio::test]
async fn the_docs_and_the_dashboard_cannot_be_framed() {
    let app = spawn_app().await;
    for path in ["/docs/", "/"] {
        let response = app.client.get(format!("{}{path}", app.address)).send().await.unwrap();
        assert_eq!(response.status(), 200, "{path}");
        let csp = response.headers()["content-security-policy"].to_str().unwrap();
        assert!(csp.contains("frame-ancestors 'none'"), "{path}: {csp}");
        assert_eq!(response.headers()["x-frame-options"], "DENY", "{path}");
    }
}

#[tokio::test]
async fn an_oversized_request_head_is_answered_with_a_problem() {
    let app = spawn_app().await;
    let long_target = format!("/api/v1/members?cursor={}", "a".repeat(9_000));
    app.request(Method::GET, &long_target, Some(READER_TOKEN), None)
        .await
        .problem(414);

    let mut request = app
        .client
        .get(format!("{}/api/v1/members", app.address))
        .bearer_auth(READER_TOKEN);
    for n in 0..80 {
        request = request.header(format!("x-extra-{n}"), "1");
    }
    let reply = crate::common::into_reply(request.send().await.unwrap()).await;
    reply.problem(431);
}

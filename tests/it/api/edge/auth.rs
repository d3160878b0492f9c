//! Case 7: the bearer scheme is case-insensitive (RFC 9110 §11.1); two `Authorization` headers
//! are a 400, not "the first one wins".

use crate::common::{ADMIN_TOKEN, READER_TOKEN, spawn_app};

#[tokio::test]
async fn the_scheme_is_matched_in_any_case_and_two_authorizations_are_refused() {
    let app = spawn_app().await;
    let url = format!("{}/api/v1/members", app.address);
    for scheme in ["Bearer", "bearer", "BEARER", "bEaReR"] {
        let response = app
            .client
            .get(&url)
            .header("authorization", format!("{scheme} {READER_TOKEN}"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{scheme}");
    }

    let response = app
        .client
        .get(&url)
        .header("authorization", format!("Bearer {READER_TOKEN}"))
        .header("authorization", format!("Bearer {ADMIN_TOKEN}"))
        .send()
        .await
        .unwrap();
    let reply = crate::common::into_reply(response).await;
    assert!(reply.problem(400)["detail"].as_str().unwrap().contains("Authorization"));
}

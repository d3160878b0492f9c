//! Case 4: a JSON body that names a key twice is a 400 and changes nothing: the service and a
//! proxy reading the first key must not see two different requests.

use reqwest::Method;

use crate::common::{LIBRARIAN_TOKEN, spawn_app};

#[tokio::test]
async fn a_body_naming_a_key_twice_is_a_bad_request() {
    let app = spawn_app().await;
    let member = app.create_member("Ada Lovelace", "ada@example.org").await;
    let path = format!("/api/v1/members/{}/payments", member["id"]);
    let before = app.row_counts().await;

    for body in [
        r#"{"amount_cents":1,"amount_cents":999}"#,
        r#"{"amount_cents":1,"note":{"a":1,"a":2}}"#,
    ] {
        let reply = app
            .send_raw(Method::POST, &path, LIBRARIAN_TOKEN, "application/json", body)
            .await;
        let problem = reply.problem(400);
        assert!(
            problem["detail"].as_str().unwrap().contains("duplicate key"),
            "{body}: {problem}"
        );
    }
    assert_eq!(app.row_counts().await, before, "nothing was paid");

    // The same payment, each key once, is taken.
    app.send_raw(
        Method::POST,
        &path,
        LIBRARIAN_TOKEN,
        "application/json",
        r#"{"amount_cents":1}"#,
    )
    .await
    .ok(201);
}

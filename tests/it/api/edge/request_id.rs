//! Case 5: a client's request id is kept only when it is short and plain; otherwise the service
//! makes its own, so a client cannot make every log line of its request 300 KB long.

use crate::common::spawn_app;

async fn request_id_answered(app: &crate::common::TestApp, sent: &str) -> String {
    let response = app
        .client
        .get(format!("{}/healthz", app.address))
        .header("x-request-id", sent)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    response.headers()["x-request-id"].to_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_long_or_odd_request_id_is_replaced_by_a_fresh_one() {
    let app = spawn_app().await;
    assert_eq!(request_id_answered(&app, "req-42.a_b:c").await, "req-42.a_b:c");

    let long = "x".repeat(300);
    for sent in [long.as_str(), "two words", "<script>", "a\"b"] {
        let answered = request_id_answered(&app, sent).await;
        assert_ne!(answered, sent);
        assert!(
            uuid::Uuid::parse_str(&answered).is_ok(),
            "{sent:?} was replaced by {answered:?}, a generated id"
        );
    }
}

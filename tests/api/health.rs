use crate::common::spawn_app;

#[tokio::test]
async fn healthz_and_readyz_answer_without_a_token() {
    let app = spawn_app().await;
    let health = app.request(reqwest::Method::GET, "/healthz", None, None).await;
    assert_eq!(health.ok(200)["status"], "ok");
    let ready = app.request(reqwest::Method::GET, "/readyz", None, None).await;
    assert_eq!(ready.ok(200)["database"], "ok");
}

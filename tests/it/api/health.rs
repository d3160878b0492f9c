use crate::common::spawn_app;

#[tokio::test]
async fn healthz_and_readyz_answer_without_a_token() {
    let app = spawn_app().await;
    let health = app.request(reqwest::Method::GET, "/healthz", None, None).await;
    assert_eq!(health.ok(200)["status"], "ok");
    let ready = app.request(reqwest::Method::GET, "/readyz", None, None).await;
    assert_eq!(ready.ok(200)["database"], "ok");
}

/// During a roll, replicas of two releases answer side by side: each says which it is, and the
/// schema it brings (its newest expand migration, applied by its own start).
#[tokio::test]
async fn healthz_names_the_release_and_its_schema() {
    let app = spawn_app().await;
    let health = app.request(reqwest::Method::GET, "/healthz", None, None).await;
    let body = health.ok(200);
    assert_eq!(body["version"], env!("CARGO_PKG_VERSION"));
    let applied: i64 = sqlx::query_scalar("select max(version) from _sqlx_migrations where success")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(body["schema"], applied, "{body}");
}

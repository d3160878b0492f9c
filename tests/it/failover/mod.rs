//! Promotions of a real standby (issue 33): fencing tokens never repeat across timelines, the
//! replicas notice the new timeline and say what it may have lost, and `/readyz` says whether
//! the primary has a synchronous standby. Each test builds its own small cluster ([`cluster`]).

mod alert;
mod cluster;
mod readyz;
mod replica;
mod tokens;

use sqlx::PgPool;

/// A pool on `url`, migrated as the service migrates.
async fn connect(url: &str) -> PgPool {
    let pool = finesettle::store::database::connect(url, 4)
        .await
        .expect("connect to the node");
    finesettle::store::database::migrate(&pool).await.expect("migrate");
    pool
}

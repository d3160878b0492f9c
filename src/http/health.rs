//! Liveness and readiness, outside `/api/v1` and without auth (load balancers call them).

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use serde_json::{Value, json};

use crate::state::AppState;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
}

/// The process is up and serving, and which release and schema it is (during a roll, replicas
/// of two releases answer side by side).
async fn healthz() -> axum::Json<Value> {
    axum::Json(json!({
        "status": "ok",
        "version": crate::store::schema::RELEASE,
        "schema": crate::store::schema::schema(),
    }))
}

/// The process can do its work: the database answers (and Redis, when configured).
async fn readyz(State(state): State<AppState>) -> (StatusCode, axum::Json<Value>) {
    let database = sqlx::query("select 1").execute(&state.pool).await.is_ok();
    let redis = match &state.redis {
        None => None,
        Some(pool) => Some(crate::store::redis::ping(pool).await),
    };
    let ready = database && redis.unwrap_or(true);
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let mut body = json!({
        "status": if ready { "ready" } else { "not ready" },
        "database": if database { "ok" } else { "unreachable" },
        "redis": redis.map(|ok| if ok { "ok" } else { "unreachable" }),
    });
    body["replication"] = replication_detail(&state.pool).await;
    (status, axum::Json(body))
}

/// `"synchronous"`, `"asynchronous"` (writes this primary acknowledges can be lost by a
/// failover) or `"none"` (no standby), `null` when it cannot be read. Detail only: it never
/// changes the readiness status (CONTRACT §5.4).
async fn replication_detail(pool: &sqlx::PgPool) -> Value {
    match crate::failover::report_replication(pool).await {
        Some(replication) => Value::from(replication.as_str()),
        None => Value::Null,
    }
}

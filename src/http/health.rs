//! Liveness and readiness, outside `/api/v1` and without auth (load balancers call them).

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use serde_json::{Value, json};
use sqlx::PgPool;

use crate::state::AppState;
use crate::store::failure;

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

/// The process can do its work: the database answers and accepts writes (and Redis answers, when
/// configured). A read-only node (a demoted primary, a proxy pointing at a standby) is not ready:
/// every write would fail, so the load balancer should send the requests elsewhere.
async fn readyz(State(state): State<AppState>) -> (StatusCode, axum::Json<Value>) {
    let database = database_state(&state.pool).await;
    let redis = match &state.redis {
        None => None,
        Some(pool) => Some(crate::store::redis::ping(pool).await),
    };
    let ready = database == "ok" && redis.unwrap_or(true);
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let mut body = json!({
        "status": if ready { "ready" } else { "not ready" },
        "database": database,
        "redis": redis.map(|ok| if ok { "ok" } else { "unreachable" }),
    });
    if database == "ok" {
        body["replication"] = replication_detail(&state.pool).await;
    }
    (status, axum::Json(body))
}

/// `ok`, `read-only` or `unreachable`. A read-only node is remembered, so that the pool drops the
/// connections still on it (store::failure).
async fn database_state(pool: &PgPool) -> &'static str {
    let read_only = match pool.acquire().await {
        Ok(mut connection) => failure::on_read_only_node(&mut connection).await,
        Err(error) => Err(error),
    };
    match read_only {
        Ok(false) => "ok",
        Ok(true) => {
            failure::saw_read_only();
            "read-only"
        }
        Err(_) => "unreachable",
    }
}

/// `"synchronous"`, `"asynchronous"` (writes this primary acknowledges can be lost by a
/// failover) or `"none"` (no standby), `null` when it cannot be read; absent while the database
/// is not `ok`. Detail only: it never changes the readiness status (CONTRACT §5.4).
async fn replication_detail(pool: &PgPool) -> Value {
    match crate::failover::report_replication(pool).await {
        Some(replication) => Value::from(replication.as_str()),
        None => Value::Null,
    }
}

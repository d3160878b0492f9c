use axum::extract::State;
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

use crate::alerts::{Alert, AlertState};
use crate::http::error::ApiError;
use crate::http::extract::{Json, Query};
use crate::http::pagination::{Page, page_request};
use crate::state::AppState;
use crate::store;

/// Which alerts to list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ToSchema)]
#[schema(rename_all = "lowercase")]
pub enum StateFilter {
    Active,
    Resolved,
    All,
}

impl StateFilter {
    /// Parsed by hand rather than by serde, so that an unknown value is a 422 naming the field
    /// (a query that fails to deserialise is a 400).
    fn parse(value: Option<&str>) -> Result<Self, ApiError> {
        match value {
            None | Some("" | "active") => Ok(StateFilter::Active),
            Some("resolved") => Ok(StateFilter::Resolved),
            Some("all") => Ok(StateFilter::All),
            Some(_) => Err(ApiError::invalid("state", "must be active, resolved or all")),
        }
    }

    fn state(self) -> Option<AlertState> {
        match self {
            StateFilter::Active => Some(AlertState::Active),
            StateFilter::Resolved => Some(AlertState::Resolved),
            StateFilter::All => None,
        }
    }
}

/// Filter and page of `GET /api/v1/alerts`, in one struct: the query string is read once, and a
/// parameter none of these name is a 400.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct StateParams {
    /// `active` (the default), `resolved` or `all`.
    #[param(inline, value_type = Option<StateFilter>)]
    pub state: Option<String>,
    /// Items per page, 1 to 500 (default 50).
    pub limit: Option<i64>,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

/// Alerts, newest first: `FAILED`, `TIMEOUT`, `MISSED`, `AUDIT`, `CLOCK_SKEW` and `DATABASE_FAILOVER`, one per kind, task and business date.
#[utoipa::path(
    get, path = "", tag = "alerts",
    params(StateParams),
    responses(
        (status = 200, description = "A page of alerts, newest first", body = Page<Alert>),
        (status = 422, description = "Invalid state, limit or cursor"),
    ),
)]
pub async fn list_alerts(
    State(state): State<AppState>,
    Query(params): Query<StateParams>,
) -> Result<Json<Page<Alert>>, ApiError> {
    let filter = StateFilter::parse(params.state.as_deref())?;
    let page = page_request(params.limit, params.cursor.as_deref())?;
    let alerts = store::alerts::list(&state.pool, filter.state(), page).await?;
    Ok(Json(Page::from_rows(alerts, page, |a| a.id)))
}

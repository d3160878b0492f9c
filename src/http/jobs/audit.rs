use axum::extract::State;
use chrono::NaiveDate;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{Job, JobPath, job_named};
use crate::audit::{self, AuditConfig, AuditError, AuditReport};
use crate::http::dates;
use crate::http::error::ApiError;
use crate::http::extract::{Json, Path};
use crate::http::resource::NoSuch;
use crate::state::AppState;

#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AuditRequest {
    /// The month to audit (YYYY-MM). It must be final: its last day and every date of it from
    /// the job's start date on have a SUCCESS.
    #[serde(deserialize_with = "dates::month")]
    #[schema(value_type = String, example = "2026-03")]
    pub month: NaiveDate,
}

/// Audits an ended month: every fine recomputed from the loans and compared, with its CHARGE and
/// REVERSAL, with what is stored.
///
/// Answers the report. Any difference raises the month's `AUDIT` alert naming the loans, and a
/// clean audit resolves it. Fines whose loan changed after they were settled are listed apart as
/// corrections for a librarian to review, loans waiting for the next run as pending accrual;
/// neither is an error. Writes nothing but the alert.
#[utoipa::path(
    post, path = "/{name}/audits", tag = "jobs",
    params(JobPath),
    responses(
        (status = 200, description = "The audit's report", body = AuditReport),
        NoSuch<Job>,
        (status = 409, description = "The month is not final yet (code `month_not_final`)"),
        (status = 422, description = "Invalid month"),
    ),
)]
pub async fn audit_month(
    State(state): State<AppState>,
    Path(JobPath { name }): Path<JobPath>,
    Json(body): Json<AuditRequest>,
) -> Result<Json<AuditReport>, ApiError> {
    job_named(&state, &name)?;
    let config = AuditConfig::from_settings(&state.settings);
    Ok(Json(audit::audit_month(&state.pool, &config, body.month).await?))
}

impl From<AuditError> for ApiError {
    fn from(error: AuditError) -> Self {
        match error {
            AuditError::NotFinal(not_final) => ApiError::conflict("month_not_final", not_final.to_string()),
            AuditError::Db(e) => ApiError::Database(e),
            AuditError::Internal(e) => ApiError::Internal(e),
        }
    }
}

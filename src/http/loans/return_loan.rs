use axum::body::{Body, Bytes};
use axum::extract::{FromRequest, Request, State};
use axum::http::StatusCode;
use chrono::{DateTime, DurationRound, SecondsFormat, TimeDelta, Utc};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use utoipa::ToSchema;

use super::Loan;
use crate::domain::LoanId;
use crate::domain::business_date;
use crate::http::dates;
use crate::http::error::{ApiError, ResultExt};
use crate::http::extract::{Json, Path};
use crate::http::resource::{NoSuch, not_found};
use crate::state::AppState;
use crate::store;
use crate::store::failure::Retries;

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReturnLoan {
    /// When the book came back; defaults to now. May be in the past (corrections, imports), never
    /// in the future nor before the loan's `borrowed_on`.
    #[serde(default, deserialize_with = "dates::optional_instant")]
    pub returned_at: Option<DateTime<Utc>>,
}

/// Records the return of a book.
///
/// The loan's `returned_on` is the business date of `returned_at`, fixed now, so that a later
/// change of the business time zone never rewrites which days were overdue.
#[utoipa::path(
    post, path = "/{id}/return", tag = "loans",
    params(("id" = i64, Path, description = "Loan id")),
    request_body(content = Option<ReturnLoan>, description = "Optional: an empty body returns the book now"),
    responses(
        (status = 200, description = "Returned", body = Loan),
        NoSuch<Loan>,
        (status = 409, description = "The loan was returned already (`loan_already_returned`)"),
        (status = 422, description = "returned_at is invalid, in the future or before borrowed_on"),
    ),
)]
pub async fn return_loan(
    State(state): State<AppState>,
    Path(id): Path<LoanId>,
    OptionalJson(body): OptionalJson<ReturnLoan>,
) -> Result<Json<Loan>, ApiError> {
    let tz = state.settings.business_tz;
    let now = store::clock::now(&state.pool).await?;
    // PostgreSQL keeps microseconds: truncate first so the check below sees what is stored.
    let returned_at = match body.unwrap_or_default().returned_at {
        Some(at) => at.duration_trunc(TimeDelta::microseconds(1)).unwrap_or(at),
        None => now,
    };
    if returned_at > now {
        return Err(ApiError::invalid(
            "returned_at",
            format!(
                "must not be in the future (now is {})",
                now.to_rfc3339_opts(SecondsFormat::Secs, true)
            ),
        ));
    }
    let returned_on = business_date(returned_at, tz);
    let mut retries = Retries::default();
    let returned = loop {
        // One statement; run again if it loses a race (a deadlock, or a serialization failure).
        let marked = store::loans::mark_returned(&state.pool, id, returned_at, returned_on).await;
        match marked {
            Err(error) if retries.again(&error).await => continue,
            done => break done,
        }
    }
    .on_constraint("loan_returned_not_before_borrowed", || {
        ApiError::invalid("returned_at", "must not be before the loan's borrowed_on")
    })?;
    match returned {
        Some(row) => {
            tracing::info!(loan.id = row.id.0, %returned_on, "book returned");
            // A returned loan gets no reminder; never fails the request.
            crate::reminders::loan_returned(state.redis.as_ref(), row.id).await;
            Ok(Json(Loan::new(row, business_date(now, tz))))
        }
        // Nothing open to return: say why.
        None => match store::loans::find(&state.pool, id).await? {
            None => Err(not_found::<Loan>()),
            Some(_) => Err(ApiError::conflict(
                "loan_already_returned",
                "this loan was returned already",
            )),
        },
    }
}

/// A JSON body that may also be absent: an empty body or `null` is `None`; anything else must be
/// JSON of type `T`, with the same answers to bad input as [`Json`].
pub struct OptionalJson<T>(pub Option<T>);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for OptionalJson<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        let (parts, body) = request.into_parts();
        let bytes = Bytes::from_request(Request::from_parts(parts.clone(), body), state)
            .await
            .map_err(|rejection| match rejection.status() {
                StatusCode::PAYLOAD_TOO_LARGE => ApiError::PayloadTooLarge,
                _ => ApiError::BadRequest(rejection.body_text()),
            })?;
        if bytes.is_empty() || bytes.trim_ascii() == b"null" {
            return Ok(OptionalJson(None));
        }
        let Json(value) = Json::<T>::from_request(Request::from_parts(parts, Body::from(bytes)), state).await?;
        Ok(OptionalJson(Some(value)))
    }
}

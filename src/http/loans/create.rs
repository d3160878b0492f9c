use axum::extract::State;
use axum::response::{IntoResponse, Response};
use chrono::NaiveDate;
use serde::{Deserialize, Serialize};
use sqlx::PgConnection;
use utoipa::ToSchema;

use super::Loan;
use crate::domain::MemberId;
use crate::http::dates;
use crate::http::error::{ApiError, FieldError, ResultExt};
use crate::http::extract::Json;
use crate::http::idempotency::{IdempotencyKey, Once};
use crate::http::response::Created;
use crate::state::AppState;
use crate::store;

/// The scope of this route's idempotency keys.
const IDEMPOTENCY_SCOPE: &str = "POST /api/v1/loans";

/// A loan to make. (Serialize: an idempotency key stores a hash of the request as parsed.)
#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewLoan {
    #[schema(value_type = i64, minimum = 1)]
    pub member_id: MemberId,
    #[schema(minimum = 1)]
    pub book_id: i64,
    /// Defaults to today's business date. May be in the past (imports), never in the future.
    #[serde(default, deserialize_with = "dates::optional_date")]
    pub borrowed_on: Option<NaiveDate>,
    /// On or after `borrowed_on`.
    #[serde(deserialize_with = "dates::date")]
    pub due_on: NaiveDate,
}

impl NewLoan {
    /// The loan's terms on business date `today`, under the current fine policy.
    fn terms(&self, today: NaiveDate, daily_fine_cents: i64) -> Result<store::loans::NewLoan, ApiError> {
        let borrowed_on = self.borrowed_on.unwrap_or(today);
        let mut errors = Vec::new();
        if borrowed_on > today {
            errors.push(FieldError::new(
                "borrowed_on",
                format!("must not be after today's business date, {today}"),
            ));
        }
        if self.due_on < borrowed_on {
            errors.push(FieldError::new(
                "due_on",
                format!("must not be before borrowed_on, {borrowed_on}"),
            ));
        }
        if !errors.is_empty() {
            return Err(ApiError::Invalid(errors));
        }
        Ok(store::loans::NewLoan {
            member_id: self.member_id,
            book_id: self.book_id,
            borrowed_on,
            due_on: self.due_on,
            daily_fine_cents,
        })
    }
}

/// Lends a book copy to a member.
///
/// With an `Idempotency-Key`, a retry with the same key and body returns the first response
/// (header `idempotent-replayed: true`) and lends nothing more. An unknown member or book is a
/// 422 naming `member_id` or `book_id`: the body is at fault, not the URL.
#[utoipa::path(
    post, path = "", tag = "loans",
    params(("Idempotency-Key" = Option<String>, Header, min_length = 1, max_length = 255, pattern = "^[!-~]+$",
        description = "Makes retries safe: 1 to 255 visible ASCII characters, unique per request")),
    responses(
        (status = 201, description = "Lent (or the replay of the first response to this key)", body = Loan,
            headers(("Location" = String, description = "The loan's URL"))),
        (status = 409, description = "The book is on an open loan (`book_already_lent`)"),
        (status = 422, description = "Invalid fields, unknown member or book, or an idempotency key reused with another body"),
    ),
)]
pub async fn create_loan(
    State(state): State<AppState>,
    key: IdempotencyKey,
    Json(body): Json<NewLoan>,
) -> Result<Response, ApiError> {
    let lend = || {
        async |tx: &mut PgConnection| {
            let today = store::clock::business_today(&mut *tx, state.settings.business_tz).await?;
            let terms = body.terms(today, state.settings.daily_fine_cents)?;
            let row = store::loans::insert(tx, &terms)
                .await
                .on_constraint("loan_one_open_per_book", || {
                    ApiError::conflict("book_already_lent", "this book is on an open loan; return it first")
                })
                .on_constraint("loan_member_id_fkey", || {
                    ApiError::invalid("member_id", "no such member")
                })
                .on_constraint("loan_book_id_fkey", || ApiError::invalid("book_id", "no such book"))?;
            let loan = Loan::new(row, today);
            Ok(Created::new(loan.location(), loan))
        }
    };
    let created = match key.create_once(&state.pool, IDEMPOTENCY_SCOPE, &body, lend).await? {
        Once::Created(created) => created,
        Once::Replayed(response) => return Ok(response),
    };
    let loan = &created.body;
    tracing::info!(
        loan.id = loan.id.0,
        member.id = loan.member_id.0,
        book.id = loan.book_id,
        "book lent"
    );
    // After the commit, so a rolled-back loan gets no reminder; never fails the request.
    let (redis, tz) = (state.redis.as_ref(), state.settings.business_tz);
    crate::reminders::loan_created(&state.pool, redis, tz, loan.id, loan.due_on).await;
    Ok(created.into_response())
}

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use sqlx::PgConnection;
use utoipa::ToSchema;

use super::Member;
use super::ledger::LedgerEntry;
use crate::domain::MemberId;
use crate::http::error::ApiError;
use crate::http::extract::{Json, Path};
use crate::http::idempotency::{IdempotencyKey, Once};
use crate::http::resource::{NoSuch, not_found};
use crate::http::response::Created;
use crate::state::AppState;
use crate::store;

/// The largest payment accepted, in cents (100 million in major units): far above any real
/// payment, and small enough that a balance would need nearly a billion of them to overflow.
pub const MAX_PAYMENT_CENTS: i64 = 10_000_000_000;

/// A payment received from the member.
// Serialize: the request is hashed to recognise an `Idempotency-Key` retry.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewPayment {
    /// The amount received, in cents: an integer from 1 to 10 000 000 000.
    #[schema(minimum = 1, maximum = 10_000_000_000_i64)]
    pub amount_cents: i64,
}

impl NewPayment {
    fn validate(&self) -> Result<i64, ApiError> {
        if (1..=MAX_PAYMENT_CENTS).contains(&self.amount_cents) {
            Ok(self.amount_cents)
        } else {
            Err(ApiError::invalid(
                "amount_cents",
                format!("must be an integer from 1 to {MAX_PAYMENT_CENTS}"),
            ))
        }
    }
}

/// The PAYMENT entry posted, with the member's balance right after it.
#[derive(Debug, Serialize, ToSchema)]
pub struct Payment {
    #[serde(flatten)]
    pub entry: LedgerEntry,
    /// What the member owes after this payment (negative means credit).
    pub balance_cents: i64,
}

/// Records a payment from a member.
///
/// Posts one PAYMENT entry of `-amount_cents` and answers it with the new balance. Paying more
/// than the balance is allowed: the balance goes negative, a credit that later charges use up.
/// Send an `Idempotency-Key` header to retry safely: the same key and body answer the first
/// response again (with `idempotent-replayed: true`) and post nothing; the same key with another
/// body is refused (422).
#[utoipa::path(
    post, path = "/{id}/payments", tag = "members",
    params(
        ("id" = i64, Path, description = "Member id"),
        ("Idempotency-Key" = Option<String>, Header, description = "1 to 255 visible ASCII characters; makes retries safe"),
    ),
    responses(
        (status = 201, description = "The payment entry and the new balance", body = Payment),
        NoSuch<Member>,
        (status = 422, description = "Invalid amount, or an Idempotency-Key reused with another body"),
    ),
)]
pub async fn create_payment(
    State(state): State<AppState>,
    Path(member_id): Path<MemberId>,
    idempotency_key: IdempotencyKey,
    Json(body): Json<NewPayment>,
) -> Result<Response, ApiError> {
    let amount_cents = body.validate()?;
    let scope = format!("POST /api/v1/members/{member_id}/payments");
    let pay = || {
        async |tx: &mut PgConnection| {
            if !store::ledger::lock_account(tx, member_id).await? {
                return Err(not_found::<Member>());
            }
            let entry = store::ledger::insert_payment(tx, member_id, amount_cents).await?;
            let balance_cents = store::ledger::balance(&mut *tx, member_id).await?;
            Ok(Created::without_location(Payment { entry, balance_cents }))
        }
    };
    let payment = match idempotency_key.create_once(&state.pool, scope, &body, pay).await? {
        Once::Created(payment) => payment,
        Once::Replayed(response) => return Ok(response),
    };
    tracing::info!(
        member.id = member_id.0,
        ledger_entry.id = payment.body.entry.id,
        amount_cents,
        "payment recorded"
    );
    Ok(payment.into_response())
}

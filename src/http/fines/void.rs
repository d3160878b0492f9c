use axum::extract::State;
use serde::Deserialize;
use sqlx::PgPool;
use utoipa::ToSchema;

use super::Fine;
use crate::domain::FineStatus;
use crate::http::error::{ApiError, ResultExt};
use crate::http::extract::{Json, Path};
use crate::http::resource::{NoSuch, not_found};
use crate::http::text_field::{Controls, text_field};
use crate::state::AppState;
use crate::store;
use crate::store::failure::Retries;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct VoidFine {
    /// Why the fine is cancelled, 1 to 500 characters (kept on the fine), at least one visible;
    /// line breaks and tabs are the only control characters allowed.
    #[schema(min_length = 1, max_length = 500, example = "book was lost in the post")]
    pub reason: String,
}

impl VoidFine {
    fn validate(&self) -> Result<&str, ApiError> {
        Ok(text_field("reason", &self.reason, 500, Controls::LineBreaksAndTabs)?)
    }
}

fn already_void() -> ApiError {
    ApiError::conflict("fine_already_void", "the fine is already void")
}

/// Voids a fine. A SETTLED fine's charge is reversed: exactly one REVERSAL entry of the fine's
/// amount is posted to the member's ledger, however many voids race. A VOID fine cannot be
/// voided again (409).
#[utoipa::path(
    post, path = "/{id}/void", tag = "fines",
    params(("id" = i64, Path, description = "Fine id")),
    responses(
        (status = 200, description = "The voided fine", body = Fine),
        NoSuch<Fine>,
        (status = 409, description = "The fine is already void (code `fine_already_void`)"),
        (status = 422, description = "Invalid reason"),
    ),
)]
pub async fn void_fine(
    State(state): State<AppState>,
    Path(id): Path<i64>,
    Json(body): Json<VoidFine>,
) -> Result<Json<Fine>, ApiError> {
    let reason = body.validate()?;
    let mut retries = Retries::default();
    let Voided {
        fine,
        previous_status,
        reversal,
    } = loop {
        match void_once(&state.pool, id, reason).await {
            Err(error) if retries.again(&error).await => continue,
            done => break done?,
        }
    };
    tracing::info!(
        fine.id = fine.id,
        fine.previous_status = %previous_status,
        ledger_entry.id = reversal,
        "fine voided"
    );
    Ok(Json(fine))
}

/// What a void changed.
struct Voided {
    fine: Fine,
    previous_status: FineStatus,
    /// The REVERSAL entry posted, for a SETTLED fine.
    reversal: Option<i64>,
}

/// The void's one transaction; run again by the handler if it loses a race.
async fn void_once(pool: &PgPool, id: i64, reason: &str) -> Result<Voided, ApiError> {
    let mut tx = pool.begin().await?;
    // Under the row lock the status cannot change before the update below: a concurrent void
    // waits here and then finds the fine VOID.
    let current = store::fines::lock(&mut tx, id).await?.ok_or_else(not_found::<Fine>)?;
    if !current.status.can_transition_to(FineStatus::Void) {
        return Err(already_void());
    }
    let fine = store::fines::void(&mut tx, id, current.status, reason)
        .await
        // The trigger's own check of the status machine, should the two ever disagree.
        .on_constraint("fine_record_status_transition", already_void)?
        .ok_or_else(already_void)?;
    // A SETTLED fine always has a positive CHARGE; the guard keeps a zero amount from ever
    // reaching the ledger's sign check.
    let reversal = if current.status == FineStatus::Settled && fine.amount_cents > 0 {
        let entry = store::ledger::insert_reversal(&mut tx, fine.member_id, fine.id, fine.amount_cents)
            .await
            .on_constraint("ledger_entry_fine_kind_key", already_void)?;
        Some(entry.id)
    } else {
        None
    };
    tx.commit().await?;
    Ok(Voided {
        fine,
        previous_status: current.status,
        reversal,
    })
}

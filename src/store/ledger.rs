//! The member ledger (`ledger_entry`): what the API posts (payments, reversals) and reads.
//!
//! Amounts are signed from the library's side (CHARGE positive, REVERSAL and PAYMENT negative),
//! so a member's balance is the plain sum of their entries. Callers pass magnitudes; the sign
//! comes from [`LedgerKind::signed_amount`], in one place.

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::PgConnection;
use utoipa::ToSchema;
use utoipa::openapi::schema::{Object, ObjectBuilder, Type};

use super::PageRequest;
use crate::domain::LedgerKind;

// The row as stored is the shape the API serves: one type (the doc comment below is the
// OpenAPI description).
/// One movement on a member's account.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct LedgerEntry {
    pub id: i64,
    pub member_id: i64,
    /// The fine a CHARGE or REVERSAL is for; null for a PAYMENT.
    pub fine_id: Option<i64>,
    #[schema(schema_with = ledger_kind_schema)]
    pub kind: LedgerKind,
    /// Signed from the library's side: CHARGE positive, REVERSAL and PAYMENT negative.
    pub amount_cents: i64,
    pub created_at: DateTime<Utc>,
}

/// The schema of a ledger kind, listing the names [`LedgerKind`] owns (inline, as the API
/// has always described it, rather than a schema of its own).
fn ledger_kind_schema() -> Object {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(LedgerKind::ALL.map(LedgerKind::as_str)))
        .build()
}

/// A page of one member's entries, oldest first (walks `ledger_entry_member`).
pub async fn list_for_member(
    executor: impl sqlx::PgExecutor<'_>,
    member_id: i64,
    page: PageRequest,
) -> sqlx::Result<Vec<LedgerEntry>> {
    sqlx::query_as!(
        LedgerEntry,
        r#"
        select id, member_id, fine_id, kind as "kind: LedgerKind", amount_cents, created_at
        from ledger_entry
        where member_id = $1 and id > $2
        order by id
        limit $3
        "#,
        member_id,
        page.after,
        page.fetch()
    )
    .fetch_all(executor)
    .await
}

/// What the member owes: the sum of their ledger (negative is a credit).
pub async fn balance(executor: impl sqlx::PgExecutor<'_>, member_id: i64) -> sqlx::Result<i64> {
    sqlx::query_scalar!(
        r#"select coalesce(sum(amount_cents), 0)::bigint as "balance!" from ledger_entry where member_id = $1"#,
        member_id
    )
    .fetch_one(executor)
    .await
}

/// Locks the member's account until the caller's transaction ends; `false` when there is no such
/// member.
///
/// Payments of one member then run one after the other, so the balance each one reports is the
/// balance right after it. `for no key update` blocks only other payments of this member, not the
/// settlement job's charges (their member checks take no row lock, migration 20261205000210).
pub async fn lock_account(conn: &mut PgConnection, member_id: i64) -> sqlx::Result<bool> {
    let found = sqlx::query_scalar!(r#"select id from member where id = $1 for no key update"#, member_id)
        .fetch_optional(conn)
        .await?;
    Ok(found.is_some())
}

/// Posts a payment of `amount_cents` (positive) received from the member.
pub async fn insert_payment(conn: &mut PgConnection, member_id: i64, amount_cents: i64) -> sqlx::Result<LedgerEntry> {
    insert(conn, member_id, None, LedgerKind::Payment, amount_cents).await
}

/// Posts the reversal of a voided fine's charge of `amount_cents` (positive).
///
/// The unique index `ledger_entry_fine_kind_key` refuses a second reversal of the same fine.
pub async fn insert_reversal(
    conn: &mut PgConnection,
    member_id: i64,
    fine_id: i64,
    amount_cents: i64,
) -> sqlx::Result<LedgerEntry> {
    insert(conn, member_id, Some(fine_id), LedgerKind::Reversal, amount_cents).await
}

async fn insert(
    conn: &mut PgConnection,
    member_id: i64,
    fine_id: Option<i64>,
    kind: LedgerKind,
    magnitude_cents: i64,
) -> sqlx::Result<LedgerEntry> {
    sqlx::query_as!(
        LedgerEntry,
        r#"
        insert into ledger_entry (member_id, fine_id, kind, amount_cents)
        values ($1, $2, $3, $4)
        returning id, member_id, fine_id, kind as "kind: LedgerKind", amount_cents, created_at
        "#,
        member_id,
        fine_id,
        kind.as_str(),
        kind.signed_amount(magnitude_cents)
    )
    .fetch_one(conn)
    .await
}

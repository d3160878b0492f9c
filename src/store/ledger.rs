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
use crate::domain::{LedgerKind, MemberId};

// The row as stored is the shape the API serves: one type (the doc comment below is the
// OpenAPI description).
/// One movement on a member's account.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct LedgerEntry {
    pub id: i64,
    #[schema(value_type = i64)]
    pub member_id: MemberId,
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

/// A page of one member's entries, oldest first (walks `ledger_entry_member`); `None` when
/// there is no such member.
///
/// One statement for what was two (the member's existence, then the page): the API's ledger
/// read is one round trip to PostgreSQL (load/results/reads.md). The member's row is joined to
/// the page of its entries, so an unknown member gives no row and a known one with no entry on
/// this page one row of nulls.
pub async fn page_of_member(
    executor: impl sqlx::PgExecutor<'_>,
    member_id: MemberId,
    page: PageRequest,
) -> sqlx::Result<Option<Vec<LedgerEntry>>> {
    let rows = sqlx::query!(
        r#"
        -- the member's row, then its entries after the cursor, at most the page's fetch
        select e.id as "id?", e.fine_id, e.kind as "kind?: LedgerKind",
               e.amount_cents as "amount_cents?", e.created_at as "created_at?"
        from member m
        left join lateral (
            select id, fine_id, kind, amount_cents, created_at
            from ledger_entry
            where member_id = m.id and id > $2
            order by id
            limit $3
        ) e on true
        where m.id = $1
        order by e.id
        "#,
        member_id.0,
        page.after,
        page.fetch()
    )
    .fetch_all(executor)
    .await?;
    if rows.is_empty() {
        return Ok(None);
    }
    let entries = rows
        .into_iter()
        .filter_map(|row| {
            // Each of these is null only in the one row of a member with no entry on this page.
            Some(LedgerEntry {
                id: row.id?,
                member_id,
                fine_id: row.fine_id,
                kind: row.kind?,
                amount_cents: row.amount_cents?,
                created_at: row.created_at?,
            })
        })
        .collect();
    Ok(Some(entries))
}

/// What the member owes: the sum of their ledger (negative is a credit).
pub async fn balance(executor: impl sqlx::PgExecutor<'_>, member_id: MemberId) -> sqlx::Result<i64> {
    sqlx::query_scalar!(
        r#"select coalesce(sum(amount_cents), 0)::bigint as "balance!" from ledger_entry where member_id = $1"#,
        member_id.0
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
pub async fn lock_account(conn: &mut PgConnection, member_id: MemberId) -> sqlx::Result<bool> {
    let found = sqlx::query_scalar!(r#"select id from member where id = $1 for no key update"#, member_id.0)
        .fetch_optional(conn)
        .await?;
    Ok(found.is_some())
}

/// Posts a payment of `amount_cents` (positive) received from the member.
pub async fn insert_payment(
    conn: &mut PgConnection,
    member_id: MemberId,
    amount_cents: i64,
) -> sqlx::Result<LedgerEntry> {
    insert(conn, member_id, None, LedgerKind::Payment, amount_cents).await
}

/// Posts the reversal of a voided fine's charge of `amount_cents` (positive).
///
/// The unique index `ledger_entry_fine_kind_key` refuses a second reversal of the same fine.
pub async fn insert_reversal(
    conn: &mut PgConnection,
    member_id: MemberId,
    fine_id: i64,
    amount_cents: i64,
) -> sqlx::Result<LedgerEntry> {
    insert(conn, member_id, Some(fine_id), LedgerKind::Reversal, amount_cents).await
}

async fn insert(
    conn: &mut PgConnection,
    member_id: MemberId,
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
        member_id.0,
        fine_id,
        kind.as_str(),
        kind.signed_amount(magnitude_cents)
    )
    .fetch_one(conn)
    .await
}

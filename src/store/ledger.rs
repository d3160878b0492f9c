//! The member ledger (`ledger_entry`): what the API posts (payments, reversals) and reads.
//!
//! Amounts are signed from the library's side (CHARGE positive, REVERSAL and PAYMENT negative),
//! so a member's balance is the plain sum of their entries. Callers pass magnitudes; the sign
//! comes from [`LedgerKind::signed_amount`], in one place.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

use super::PageRequest;
use crate::domain::LedgerKind;

/// A ledger entry, with its kind parsed.
#[derive(Debug, Clone)]
pub struct LedgerEntryRow {
    pub id: i64,
    pub member_id: i64,
    /// The fine a CHARGE or REVERSAL is for; `None` for a PAYMENT.
    pub fine_id: Option<i64>,
    pub kind: LedgerKind,
    pub amount_cents: i64,
    pub created_at: DateTime<Utc>,
}

/// A row as selected: `kind` is still text (a check constraint keeps it to the three names).
struct StoredEntry {
    id: i64,
    member_id: i64,
    fine_id: Option<i64>,
    kind: String,
    amount_cents: i64,
    created_at: DateTime<Utc>,
}

impl TryFrom<StoredEntry> for LedgerEntryRow {
    type Error = sqlx::Error;

    fn try_from(row: StoredEntry) -> sqlx::Result<Self> {
        Ok(LedgerEntryRow {
            kind: row.kind.parse().map_err(|e| sqlx::Error::Decode(Box::new(e)))?,
            id: row.id,
            member_id: row.member_id,
            fine_id: row.fine_id,
            amount_cents: row.amount_cents,
            created_at: row.created_at,
        })
    }
}

/// A page of one member's entries, oldest first (walks `ledger_entry_member`).
pub async fn list_for_member(
    executor: impl sqlx::PgExecutor<'_>,
    member_id: i64,
    page: PageRequest,
) -> sqlx::Result<Vec<LedgerEntryRow>> {
    sqlx::query_as!(
        StoredEntry,
        r#"
        select id, member_id, fine_id, kind, amount_cents, created_at
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
    .await?
    .into_iter()
    .map(LedgerEntryRow::try_from)
    .collect()
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
/// balance right after it. `for no key update` does not block the foreign-key checks of other
/// ledger inserts (the settlement job's charges), only other payments of this member.
pub async fn lock_account(conn: &mut PgConnection, member_id: i64) -> sqlx::Result<bool> {
    let found = sqlx::query_scalar!(r#"select id from member where id = $1 for no key update"#, member_id)
        .fetch_optional(conn)
        .await?;
    Ok(found.is_some())
}

/// Posts a payment of `amount_cents` (positive) received from the member.
pub async fn insert_payment(
    conn: &mut PgConnection,
    member_id: i64,
    amount_cents: i64,
) -> sqlx::Result<LedgerEntryRow> {
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
) -> sqlx::Result<LedgerEntryRow> {
    insert(conn, member_id, Some(fine_id), LedgerKind::Reversal, amount_cents).await
}

async fn insert(
    conn: &mut PgConnection,
    member_id: i64,
    fine_id: Option<i64>,
    kind: LedgerKind,
    magnitude_cents: i64,
) -> sqlx::Result<LedgerEntryRow> {
    sqlx::query_as!(
        StoredEntry,
        r#"
        insert into ledger_entry (member_id, fine_id, kind, amount_cents)
        values ($1, $2, $3, $4)
        returning id, member_id, fine_id, kind, amount_cents, created_at
        "#,
        member_id,
        fine_id,
        kind.as_str(),
        kind.signed_amount(magnitude_cents)
    )
    .fetch_one(conn)
    .await?
    .try_into()
}

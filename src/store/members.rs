//! Members, with their balance: the sum of their ledger.

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use super::PageRequest;
use crate::domain::MemberId;

// The row with its balance is the shape the API serves: one type (the doc comment below is
// the OpenAPI description).
/// A member of the library and what they owe.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Member {
    #[schema(value_type = i64)]
    pub id: MemberId,
    pub name: String,
    pub email: String,
    /// What the member owes, in cents: the sum of their ledger (negative means credit).
    pub balance_cents: i64,
    pub created_at: DateTime<Utc>,
}

pub async fn insert(executor: impl sqlx::PgExecutor<'_>, name: &str, email: &str) -> sqlx::Result<Member> {
    sqlx::query_as!(
        Member,
        r#"
        insert into member (name, email) values ($1, $2)
        returning id, name, email, 0::bigint as "balance_cents!", created_at
        "#,
        name,
        email
    )
    .fetch_one(executor)
    .await
}

pub async fn find(executor: impl sqlx::PgExecutor<'_>, id: MemberId) -> sqlx::Result<Option<Member>> {
    sqlx::query_as!(
        Member,
        r#"
        select m.id, m.name, m.email, m.created_at,
               -- what the member owes: charges minus reversals and payments
               coalesce((select sum(l.amount_cents) from ledger_entry l where l.member_id = m.id), 0)::bigint
                   as "balance_cents!"
        from member m
        where m.id = $1
        "#,
        id.0
    )
    .fetch_optional(executor)
    .await
}

pub async fn exists(executor: impl sqlx::PgExecutor<'_>, id: MemberId) -> sqlx::Result<bool> {
    sqlx::query_scalar!(
        r#"select exists (select 1 from member where id = $1) as "exists!""#,
        id.0
    )
    .fetch_one(executor)
    .await
}

/// A page of members in id order, each with its balance.
pub async fn list(executor: impl sqlx::PgExecutor<'_>, page: PageRequest) -> sqlx::Result<Vec<Member>> {
    sqlx::query_as!(
        Member,
        r#"
        select m.id, m.name, m.email, m.created_at,
               coalesce((select sum(l.amount_cents) from ledger_entry l where l.member_id = m.id), 0)::bigint
                   as "balance_cents!"
        from member m
        where m.id > $1
        order by m.id
        limit $2
        "#,
        page.after,
        page.fetch()
    )
    .fetch_all(executor)
    .await
}

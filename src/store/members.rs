//! Members, with their balance: the sum of their ledger.

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use super::PageRequest;
use super::rows::{find_by_id, page_in_id_order};
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
    find_by_id!(Member, executor, id.0)
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
    page_in_id_order!(Member, executor, page)
}

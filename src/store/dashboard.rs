//! Aggregates for the operator dashboard: sums over whole tables, with no row of any member.

use crate::domain::FineStatus;

/// Fines of one status: how many, and how much in all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FineTotal {
    pub status: FineStatus,
    pub count: i64,
    pub amount_cents: i64,
}

/// Fine counts and amounts by status; statuses without any fine are absent.
///
/// One pass over `fine_record` (no index answers a sum): the dashboard bounds how many of
/// these run at once.
pub async fn fine_totals(executor: impl sqlx::PgExecutor<'_>) -> sqlx::Result<Vec<FineTotal>> {
    sqlx::query_as!(
        FineTotal,
        r#"
        select status as "status: FineStatus",
               count(*) as "count!",
               -- sum(bigint) is numeric; the total of real fines fits a bigint by far
               coalesce(sum(amount_cents), 0)::bigint as "amount_cents!"
        from fine_record
        group by status
        order by status
        "#
    )
    .fetch_all(executor)
    .await
}

//! Storage: sqlx queries grouped by table or aggregate.
//!
//! Functions take an executor (a pool, or a transaction the caller opened), so the caller decides
//! what commits together. SQL is checked at compile time against the schema (`sqlx::query!`, with
//! the `.sqlx/` data committed for offline builds). The columns each row type is read from are
//! written once, in `rows` (`select_rows!`, `returning_rows!`).

pub mod alerts;
pub mod attempts;
pub mod audit;
pub mod books;
pub mod clock;
pub mod dashboard;
pub mod database;
pub mod database_identity;
pub mod executions;
pub mod failure;
pub mod fines;
pub mod ledger;
pub mod loans;
pub mod members;
pub mod notifications;
pub mod reads;
pub mod replica_clocks;
pub mod replication;
mod rows;
pub mod schema;
pub mod session;
pub mod start_date;

/// A validated page request: the rows after id `after`, at most `limit` of them.
#[derive(Debug, Clone, Copy)]
pub struct PageRequest {
    pub after: i64,
    pub limit: i64,
}

impl PageRequest {
    /// Rows to fetch: one more than the page, to know whether another page follows.
    pub fn fetch(&self) -> i64 {
        self.limit + 1
    }
}
pub mod idempotency;
pub mod redis;

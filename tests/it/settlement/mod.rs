//! The settlement procedure against the real database: accrue and settle per business date, the
//! backfill walk, execution records, fencing, failures and reruns.
//!
//! Expected rows come from [`oracle`](crate::common::oracle), an independent model that applies CONTRACT §2.4 day by day with
//! the rules of `finesettle::domain`; the database rows are compared with it field by field.

mod audit;
mod correctness;
mod failures;
mod fencing;
mod imports;
mod integrity;
mod reruns;
mod walk;

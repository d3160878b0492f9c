//! Pure domain rules: no I/O, no clock.
//!
//! Everything here is a function of its arguments, so the scheduler, the HTTP layer and the SQL
//! code can share one definition of "overdue", "fine", "final" and "which dates to settle", and
//! tests can check those rules exhaustively. Callers pass in business dates (see
//! [`calendar::business_date`]); nothing here reads a clock.
//!
//! - [`calendar`]: month bounds and business dates.
//! - [`loan`]: loan terms and overdue days.
//! - [`fine`]: the monthly fine as of a date, and when it is final.
//! - [`status`]: the fine status machine and ledger entry kinds.
//! - [`execution`]: what started a run, an execution's status, a fire's outcome.
//! - [`backfill`]: which business dates an operator's run settles, and the start-date rule.
//! - [`audit`]: a loan's month recomputed and compared with its stored fine and ledger.
//! - [`text`]: names and reasons a person wrote, e-mail addresses.
//! - [`alert`], [`reminder`]: what an alert and a loan reminder are (their rules live in
//!   `crate::alerts` and `crate::reminders`).
//! - `stored_name`: the UPPER_SNAKE_CASE spelling every stored kind shares.
//! - [`replica_clock`]: a replica's clock measured against the database's.
//! - [`task`]: the names of the scheduled tasks.
//! - [`ids`]: the ids and tokens that cross modules, each a type of its own.

pub mod alert;
pub mod audit;
pub mod backfill;
pub mod calendar;
pub mod execution;
pub mod failover;
pub mod fine;
pub mod ids;
pub mod loan;
pub mod reminder;
pub mod replica_clock;
pub mod status;
mod stored_name;
pub mod task;
pub mod text;

#[cfg(test)]
mod testutil;

pub use backfill::{
    BeforeStart, FIRST_START_MAX_DAYS, RangeError, check_first_start, check_not_before_start, manual_dates,
    manual_range,
};
pub use calendar::{business_date, format_month, month_end, month_start, parse_month, same_month};
pub use fine::{
    FineOverflow, MAX_DAILY_FINE_CENTS, MonthlyFine, accrue, final_fine, fine_for_month, is_final, try_fine_for_month,
};
pub use ids::{FencingToken, LoanId, MemberId, OwnerToken, TaskName};
pub use loan::{LoanError, LoanTerms};
pub use status::{FineStatus, LedgerKind, ParseStatusError, can_transition};
pub use task::SETTLE_FINES;

//! Time as a replica reads it.
//!
//! The database's clock decides everything that matters (CONTRACT §1.1): leases, "today", which
//! dates have ended, when a fire happens. A replica still needs a clock of its own to *wait* for
//! a cron slot without asking the database every moment, so:
//!
//! - [`Clock`] is this replica's wall clock, the one place the process reads the time of day. In
//!   production it is the system clock; tests shift or jump it per replica, as a host without NTP
//!   or a VM resumed after a day would.
//! - [`DatabaseTime`] is the database's clock as this replica estimates it: its own clock minus
//!   the last measured skew. The cron waits on it, re-measuring before each fire, so a replica
//!   whose clock is hours off still fires within a second of the slot by the database's clock.

mod database;
mod replica;

pub use database::DatabaseTime;
pub use replica::Clock;

//! Duplicate-run tests in containers (issue 11): a PostgreSQL container and three replicas from
//! the project's own image (`scripts/build-image`) on one Docker network, each replica serving
//! with a fast cron, and faults only a container runtime gives:
//!
//! - `docker kill` of the lock holder in the middle of a date ([`kill`]);
//! - `docker pause`, the cgroup freezer, past the holder's lease ([`pause`]);
//! - a restart of the PostgreSQL container in the middle of the walk ([`postgres_restart`]);
//! - the holder cut off the network, its TCP connections hanging rather than reset
//!   ([`partition`]).
//!
//! Each ends with the checks of the process tests (`common::checks`): one SUCCESS per business
//! date, fines equal to the oracle's, no CHARGE posted twice.
//!
//! They need Docker and the image, so the default nextest profile leaves them out; CI's profile
//! (`cargo nextest run --profile ci`) runs them.

mod stack;

mod kill;
mod partition;
mod pause;
mod postgres_restart;

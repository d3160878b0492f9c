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
//! Each ends with the checks of the process tests (`tests/replicas/`): one SUCCESS per business
//! date, fines equal to the oracle's, no CHARGE posted twice.
//!
//! They need Docker and the image, so the default nextest profile leaves them out; CI's profile
//! (`cargo nextest run --profile ci`) runs them.

#[path = "../common/mod.rs"]
mod common;

// The process tests' checks, data and oracle, shared rather than copied; not every helper of
// theirs is used here.
#[path = "../replicas/checks.rs"]
#[allow(dead_code)]
mod checks;
#[path = "../settlement/data.rs"]
#[allow(dead_code)]
mod data;
#[path = "../settlement/oracle.rs"]
#[allow(dead_code)]
mod oracle;
#[path = "../replicas/seed.rs"]
#[allow(dead_code)]
mod seed;
#[path = "../replicas/slow.rs"]
#[allow(dead_code)]
mod slow;
#[path = "../settlement/support.rs"]
#[allow(dead_code)]
mod support;

mod stack;

mod kill;
mod partition;
mod pause;
mod postgres_restart;

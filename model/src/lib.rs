//! A checked model of finesettle's nightly job protocol (CONTRACT §2), written for the
//! [`stateright`] model checker.
//!
//! The tests that kill or pause a replica each try one interleaving. This crate describes the
//! protocol as a small world (two or three replicas, one lock store with its own clock, the
//! execution records, a few business dates, coarse time) and lets the checker visit every
//! interleaving of it, including every fault a replica meets: a crash at any step, a pause of any
//! length (its lease expiring meanwhile), a database that refuses a commit, a commit whose answer
//! is lost, a database that fails over, a clock that is off.
//!
//! - [`world`]: the state: replicas, the lock store, the records, and the clock.
//! - [`protocol`]: the steps, what they answer, and when time may pass ([`Protocol`] is the
//!   stateright model); `steps.rs` what each step does to the world, `lost_answers.rs` the
//!   commits whose answer a replica never hears.
//! - [`failover`]: the database's standby promoted, under synchronous or asynchronous
//!   replication, and the fencing tokens that stay unique across it.
//! - [`properties`]: what must hold in every reachable state, and the liveness property.
//! - [`Bug`]: protocol bugs the model can be built with, to show the checker catches each.
//! - [`story`]: a counterexample told as the sequence of steps, one line each.
//! - [`walk`]: seeded random walks, which `tests/it/lock/conformance.rs` replays against the real
//!   lock stores, fence and records.
//!
//! docs/DESIGN.md §4.8 says what the model covers, what it abstracts away, and how to read a
//! counterexample.

pub mod bugs;
pub mod failover;
mod lost_answers;
pub mod properties;
pub mod protocol;
mod steps;
pub mod story;
pub mod walk;
pub mod world;

pub use bugs::{Bug, Bugs};
pub use failover::Replication;
pub use protocol::{Action, Config, Outcome, Protocol};
pub use world::{Database, Job, Proc, Replica, Standby, Store, Trigger, World};

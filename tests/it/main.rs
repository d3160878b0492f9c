//! The integration tests: one test binary, one module per area of the service.
//!
//! One binary links the crate once, where a binary per area linked it twelve times; the test build
//! was most of a clean CI run. Test names carry the area as their first segment
//! (`lock::fence::postgres::...`), which the nextest profiles and `.ci/run` filter on
//! (`binary(it) & test(/^lock::/)`; `binary(it)` too, because the library's unit tests have
//! modules of the same names).
//!
//! The helpers more than one area uses are in [`common`]: the harness (a database, a Redis
//! database and the application per test), the settlement tests' data, oracle and runners, and
//! the process tests' harness, seed data, slow dates and checks.
//!
//! nextest runs each test in a process of its own, so process-wide state (telemetry's global
//! subscriber, the harness's `OnceCell`s holding the server URLs and containers) is never shared
//! between tests there; under `cargo test` the tests share it as those of one area always did.

mod common;

mod alerts;
mod api;
mod containers;
mod dashboard;
mod database;
mod failover;
mod ha;
mod layering;
mod lock;
mod reminders;
mod replicas;
mod schedule;
mod seed;
mod settlement;
mod telemetry;
mod upgrade;

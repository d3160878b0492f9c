//! finesettle: lending-library fines with a nightly settlement job that runs once across replicas.
//!
//! The job's path reads in one direction: `schedule` fires, `lock` grants a lease and a fencing
//! token, `settlement` walks the missing dates and writes through `store` with that token, and
//! `telemetry` reports it. `domain` holds the pure rules and knows none of them.
pub mod alerts;
pub mod audit;
pub mod backoff;
pub mod cli;
pub mod clock;
pub mod config;
pub mod domain;
pub mod failover;
pub mod format;
pub mod http;
pub mod jobs;
pub mod lock;
pub mod reminders;
pub mod schedule;
pub mod seed;
pub mod settlement;
pub mod startup;
pub mod state;
pub mod store;
pub mod telemetry;
pub mod ticks;
pub mod tls;

//! Loan reminders against the real Redis and PostgreSQL (CONTRACT §4): scheduling and delivery,
//! redelivery after a consumer dies, three consumers on one queue, the reconciler after Redis
//! lost its data or was down, returned loans, the notifications API and the worker loop.
//!
//! Each test has a Redis logical database of its own (see `common::redis`), and drives the
//! consumer with explicit instants: nothing depends on the wall clock's time of day.

mod api;
mod concurrency;
mod delivery;
mod reconcile;
mod redelivery;
mod support;
mod worker;

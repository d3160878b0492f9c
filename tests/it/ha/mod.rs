//! The service on a real high-availability PostgreSQL (issue 33): three `finesettle serve`
//! processes reach a Patroni cluster of three nodes (synchronous mode) through HAProxy, as in
//! production, while the nightly job walks slowed dates and a client posts keyed payments; then
//! the cluster fails over, planned or not. Each test checks every date once, fines equal to the
//! oracle's, every acknowledged payment exactly once, nothing but 503 `unavailable` while there
//! is no primary, and every replica ready again by itself; and prints what the fault cost.
//!
//! They need Debian's `patroni`, `etcd-server` and `haproxy` (and `postgresql-15`), and each
//! starts three PostgreSQL nodes: nextest runs one at a time (`.config/nextest.toml`), and only
//! in the `ci` profile.

mod payments;
mod walk;

mod cluster;
mod killed_primary;
mod lost_writes;
mod switchover;

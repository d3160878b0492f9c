//! Rolling upgrades (issue 20): the schema guard that lets a release serve a newer release's
//! expansion and refuse its contract step, and a mixed fleet of the previous release and this
//! one through a roll and a rollback (`fleet`, which needs the previous release built).
//!
//! The replica suite's process harness, seed data, slow dates and checks are shared rather than
//! copied (`common::process`, `common::seed`, `common::slow`, `common::checks`).

mod fleet;
mod guard;

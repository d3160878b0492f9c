//! Rolling upgrades (issue 20): the schema guard that lets a release serve a newer release's
//! expansion and refuse its contract step, and a mixed fleet of the previous release and this
//! one through a roll and a rollback (`fleet`, which needs the previous release built).
//!
//! The replica suite's process harness, seed data, slow dates and checks are shared rather than
//! copied; not every helper of theirs is used here.

#[path = "../common/mod.rs"]
mod common;

#[path = "../settlement/data.rs"]
#[allow(dead_code)]
mod data;
#[path = "../settlement/oracle.rs"]
#[allow(dead_code)]
mod oracle;
#[path = "../settlement/support.rs"]
#[allow(dead_code)]
mod support;

#[path = "../replicas/checks.rs"]
#[allow(dead_code)]
mod checks;
#[path = "../replicas/process.rs"]
#[allow(dead_code)]
mod process;
#[path = "../replicas/seed.rs"]
#[allow(dead_code)]
mod seed;
#[path = "../replicas/slow.rs"]
#[allow(dead_code)]
mod slow;

mod fleet;
mod guard;

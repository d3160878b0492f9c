//! Duplicate-run tests of the settlement job across replicas (issue 4): replicas racing for the
//! same fire, in one process and as real OS processes; a holder killed, paused past its lease,
//! or stopped with SIGTERM in the middle of a backfill; `lock_at_least_for`; the CLI.
//!
//! Every test ends with the same three checks: exactly one SUCCESS per business date, no CHARGE
//! posted twice, and fines and ledger equal to the independent day-by-day oracle of
//! `tests/settlement/oracle.rs`.

#[path = "../common/mod.rs"]
mod common;

// The settlement tests' data generators and oracle, shared rather than copied; not every helper
// of theirs is used here.
#[path = "../settlement/data.rs"]
#[allow(dead_code)]
mod data;
#[path = "../settlement/oracle.rs"]
#[allow(dead_code)]
mod oracle;
#[path = "../settlement/support.rs"]
#[allow(dead_code)]
mod support;

mod checks;
mod process;
mod seed;

mod audit_cli;
mod cli;
mod crash;
mod in_process;
mod pause;
mod processes;
mod shutdown;

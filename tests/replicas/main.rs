//! Duplicate-run tests of the settlement job across replicas (issue 4): replicas racing for the
//! same fire, in one process and as real OS processes; a holder killed, paused past its lease,
//! or stopped with SIGTERM in the middle of a backfill; `lock_at_least_for`; the CLI. And the
//! operator's ordinary day (issue 10): a date longer than the lease, a fire that meets a held
//! lock, shutdown whatever started the run, a database blip in the middle of a date.
//!
//! Most tests end with the same three checks: exactly one SUCCESS per business date, no CHARGE
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
mod cron;
mod process;
mod seed;
mod slow;

mod audit_cli;
mod blip;
mod cli;
mod crash;
mod held_fire;
mod in_process;
mod long_date;
mod operators;
mod pause;
mod processes;
mod shutdown;
mod skewed_clocks;

//! Duplicate-run tests of the settlement job across replicas (issue 4): replicas racing for the
//! same fire, in one process and as real OS processes; a holder killed, paused past its lease,
//! or stopped with SIGTERM in the middle of a backfill; `lock_at_least_for`; the CLI. And the
//! operator's ordinary day (issue 10): a date longer than the lease, a fire that meets a held
//! lock, shutdown whatever started the run, a database blip in the middle of a date.
//!
//! Most tests end with the same three checks: exactly one SUCCESS per business date, no CHARGE
//! posted twice, and fines and ledger equal to the independent day-by-day oracle of
//! `common::oracle`.

mod cron;

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

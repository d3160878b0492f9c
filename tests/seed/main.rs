//! `finesettle seed`: the data set it writes, its refusals, `--reset`, and the command itself.

#[path = "../common/mod.rs"]
mod common;

mod cli;
mod library;

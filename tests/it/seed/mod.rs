//! `finesettle seed`: the data set it writes, its refusals, `--reset`, and the command itself.

mod cli;
mod library;

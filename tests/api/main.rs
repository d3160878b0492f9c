//! HTTP API tests: every endpoint's success path and its bad inputs.

#[path = "../common/mod.rs"]
mod common;

mod errors;
mod health;
mod members;

//! HTTP API tests: every endpoint's success path and its bad inputs.

mod audit;
mod books;
mod completeness;
mod edge;
mod errors;
mod fines;
mod health;
mod jobs;
mod ledger;
mod loans;
mod members;
mod openapi;
mod reads;

//! The HTTP edge against hostile and careless clients (issue 12): one test per case found by an
//! outside probe, each failing on the code before the fix.

mod auth;
mod connections;
mod dates;
mod headers;
mod idempotency;
mod json;
mod query;
mod raw;
mod request_id;
mod values;

//! Alert tests against the real database: each kind raised from arranged execution records (or
//! recorded clock measurements) and resolved by the fix, raised once however many replicas
//! evaluate, announced once as a log event and once per event to a webhook receiver, and listed
//! by the API.

mod api;
mod clock_skew;
mod events;
mod missed;
mod raise_and_resolve;
mod replicas;
mod support;
mod webhook;
mod worker;

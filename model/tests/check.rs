//! The model checked exhaustively: every interleaving of the world of `Config::checked()`.
//! Prints the states explored and the time; a violated property fails with its counterexample
//! told step by step (`story::tell`).

use std::time::Instant;

use finesettle_model::{Config, Protocol, story};
use stateright::{Checker, Model};

#[test]
fn every_property_holds_in_every_interleaving() {
    let model = Protocol::new(Config::checked());
    let started = Instant::now();
    let checker = model.clone().checker().threads(2).spawn_bfs().join();
    println!(
        "model checked: {} states explored ({} unique), max depth {}, in {:.1?}",
        checker.state_count(),
        checker.unique_state_count(),
        checker.max_depth(),
        started.elapsed()
    );
    assert!(checker.is_done(), "the checker stopped before it visited every state");
    let mut failures = String::new();
    for property in model.properties() {
        let found = checker.discovery(property.name);
        match (property.expectation.discovery_is_failure(), found) {
            (true, Some(path)) => {
                failures += &format!("\nviolated: {}\n{}", property.name, story::tell(&model, &path));
            }
            (false, None) => failures += &format!("\nnever seen: {}\n", property.name),
            _ => {}
        }
    }
    assert!(failures.is_empty(), "{failures}");
}

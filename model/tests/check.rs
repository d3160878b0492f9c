//! The model checked exhaustively: every interleaving of the world of `Config::checked()`
//! (synchronous replication), and of the same world with asynchronous replication. Prints the
//! states explored and the time; a violated property fails with its counterexample told step by
//! step (`story::tell`).

use std::collections::BTreeMap;
use std::time::Instant;

use finesettle_model::properties::ACKNOWLEDGED_SUCCESS_KEPT;
use finesettle_model::{Config, Protocol, story};
use stateright::{Checker, Model};

#[test]
fn every_property_holds_in_every_interleaving() {
    let failures = check(Config::checked());
    assert!(failures.is_empty(), "{}", told(&failures));
}

/// Asynchronous replication: the timeline in the token keeps every fencing token unique, and
/// everything else holds, but a promotion can lose a SUCCESS that was acknowledged, which no
/// protocol of the service can prevent.
#[test]
fn with_asynchronous_replication_only_an_acknowledged_success_can_be_lost() {
    let mut failures = check(Config::asynchronous());
    let lost = failures
        .remove(ACKNOWLEDGED_SUCCESS_KEPT)
        .unwrap_or_else(|| panic!("no counterexample to \"{ACKNOWLEDGED_SUCCESS_KEPT}\""));
    println!("violated, as expected: {ACKNOWLEDGED_SUCCESS_KEPT}\n{lost}");
    assert!(failures.is_empty(), "{}", told(&failures));
}

/// Checks every interleaving of `config`'s world: the properties violated (with their
/// counterexamples) and the `sometimes` never seen, by name.
fn check(config: Config) -> BTreeMap<&'static str, String> {
    let model = Protocol::new(config);
    let started = Instant::now();
    let checker = model.clone().checker().threads(2).spawn_bfs().join();
    println!(
        "model checked ({:?}): {} states explored ({} unique), max depth {}, in {:.1?}",
        model.config.failover,
        checker.state_count(),
        checker.unique_state_count(),
        checker.max_depth(),
        started.elapsed()
    );
    assert!(checker.is_done(), "the checker stopped before it visited every state");
    let mut failures = BTreeMap::new();
    for property in model.properties() {
        let found = checker.discovery(property.name);
        match (property.expectation.discovery_is_failure(), found) {
            (true, Some(path)) => {
                failures.insert(property.name, format!("violated:\n{}", story::tell(&model, &path)));
            }
            (false, None) => {
                failures.insert(property.name, "never seen".to_string());
            }
            _ => {}
        }
    }
    failures
}

fn told(failures: &BTreeMap<&'static str, String>) -> String {
    failures
        .iter()
        .map(|(name, what)| format!("\n{name}: {what}\n"))
        .collect()
}

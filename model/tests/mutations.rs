//! Proof that the checker can fail: each seeded bug is caught, and its counterexample is the
//! story of that bug.
//!
//! The checker runs breadth-first on one thread, so a counterexample is a shortest one and the
//! same on every run: its length and its decisive steps are asserted, and it is printed
//! (`cargo nextest run -p finesettle-model --no-capture -E 'binary(mutations)'`).

mod common;

use common::{Counterexample, asked_at, checked, committed, granted, working_token};
use finesettle_model::properties::{
    EVERY_DATE_SETTLED, LEASE_BELIEF, NO_STALE_COMMIT, NOT_BEFORE_ITS_END, ONE_SUCCESS_PER_DATE, STOPS_WHEN_LOST,
    TOKENS_NEVER_GO_BACK,
};
use finesettle_model::world::end_of;
use finesettle_model::{Action, Bug, Config, Outcome};

#[test]
fn without_the_fence_at_commit_a_holder_whose_lease_passed_on_commits() {
    let found = checked(&[Bug::NoFenceAtCommit], NO_STALE_COMMIT);
    let (before, r, outcome, _) = found.last_by(Action::Commit);
    assert!(matches!(outcome, Outcome::Recorded { .. }));
    let lease = working_token(&before, r);
    assert!(
        lease < before.store.token,
        "its token {lease} was no longer the store's"
    );
    // the lock passed on: granted to the other replica, which may not even have heard it
    assert!(
        found
            .has(|a, o| granted(o).is_some() && !matches!(a, Action::Answer(o2) | Action::GrantUnheard(o2) if o2 == r))
    );
    assert_eq!(found.len(), 9);
}

#[test]
fn a_release_without_the_owner_check_shortens_the_next_holders_lease() {
    let found = checked(&[Bug::ReleaseWithoutOwnerCheck], LEASE_BELIEF);
    let (before, _, outcome, after) = found.last_by(Action::Release);
    assert_eq!(outcome, Outcome::Released { owned: false });
    assert!(
        after.store.locked_until < before.store.locked_until,
        "the holder's lease shrank"
    );
    assert_eq!(found.len(), 9);
}

#[test]
fn a_lease_counted_from_before_the_wait_ends_before_its_holder_thinks() {
    let found = checked(&[Bug::LeaseFromBeforeTheWait], LEASE_BELIEF);
    let (before, r, outcome, after) = found.last_by(Action::Answer);
    assert!(matches!(outcome, Outcome::Taken { .. }));
    // the acquisition waited (a paused request, or a busy row) before the store granted it
    assert!(asked_at(&before, r) < before.now);
    assert!(after.store.locked_until < before.now + Config::checked().lease);
    assert_eq!(found.len(), 6);
}

#[test]
fn a_renewal_that_ignores_its_loss_lets_the_holder_start_another_date() {
    let found = checked(&[Bug::RenewalIgnoresItsLoss], STOPS_WHEN_LOST);
    let (_, r, outcome, _) = found.last_by(Action::Begin);
    assert!(matches!(outcome, Outcome::Running { .. }));
    assert!(found.has(|a, o| a == Action::Renew(r) && o == Outcome::RenewalLost));
    assert!(found.has(|a, o| a == Action::Forget && matches!(o, Outcome::Forgot { .. })));
    assert_eq!(found.len(), 9);
}

#[test]
fn a_planner_trusting_the_replica_clock_settles_a_date_before_it_ends() {
    let found = checked(&[Bug::PlannerTrustsTheReplicaClock], NOT_BEFORE_ITS_END);
    let early = found
        .steps
        .iter()
        .find_map(|&(before, action, outcome, _)| match committed(outcome) {
            Some(date) if before.now < end_of(date) => Some((before, action)),
            _ => None,
        });
    let Some((before, Action::Commit(r) | Action::CommitUnheard(r))) = early else {
        panic!("no early commit")
    };
    assert_eq!(before.replicas[r].skew, 1, "the replica whose clock is ahead");
    assert!(found.len() <= 6, "{} steps", found.len());
}

#[test]
fn without_the_unique_index_and_the_fence_a_date_succeeds_twice() {
    let found = checked(&[Bug::NoFenceAtCommit, Bug::NoUniqueSuccess], ONE_SUCCESS_PER_DATE);
    let recorded = found
        .steps
        .iter()
        .filter(|&&(_, _, outcome, _)| committed(outcome) == Some(0))
        .count();
    assert_eq!(recorded, 2);
    assert_eq!(found.len(), 11);
}

#[test]
fn a_counter_restarted_after_the_store_lost_its_data_goes_backwards() {
    let found = checked(&[Bug::CounterRestartsAfterLoss], TOKENS_NEVER_GO_BACK);
    assert!(found.has(|a, _| a == Action::Forget));
    let (before, _, outcome, _) = found.last();
    let token = granted(outcome).unwrap_or_else(|| panic!("ends with a grant, not {outcome:?}"));
    assert!(token <= before.history.highest_token);
}

#[test]
fn liveness_fails_when_disturbances_last_until_the_end() {
    // Disturbances until the last tick: a replica resumed then has no slot left to settle in,
    // so the property is not vacuous and the calm period of `Config::checked()` is needed.
    let config = Config {
        faults_until: 8,
        ..Config::checked()
    };
    let found = Counterexample::find(config, &[], EVERY_DATE_SETTLED);
    let (_, _, _, end) = found.last();
    assert_eq!(end.now, 8);
    assert!(end.settled.iter().take(2).any(Option::is_none));
}

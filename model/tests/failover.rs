//! The checker's counterexamples for the database's own faults: a commit whose answer is lost,
//! and a promotion of an asynchronous standby, which loses the tail of the commits.
//!
//! `tests/check.rs` shows that synchronous replication loses nothing and that, with asynchronous
//! replication, the timeline in the token keeps tokens unique; these show what the checker finds
//! otherwise: a shortest counterexample each (one thread, breadth-first), printed
//! (`cargo nextest run -p finesettle-model --no-capture -E 'binary(failover)'`).

mod common;

use common::{Counterexample, checked, granted};
use finesettle_model::properties::{ACKNOWLEDGED_SUCCESS_KEPT, ONE_SUCCESS_PER_DATE, TOKENS_NEVER_GO_BACK};
use finesettle_model::{Action, Bug, Config, Outcome};

#[test]
fn an_asynchronous_promotion_loses_an_acknowledged_success() {
    let found = Counterexample::find(Config::asynchronous(), &[], ACKNOWLEDGED_SUCCESS_KEPT);
    let (before, action, outcome, after) = found.last();
    assert_eq!(action, Action::Promote);
    let Outcome::Promoted {
        timeline: 2,
        lost_dates,
    } = outcome
    else {
        panic!("ends with a promotion, not {outcome:?}")
    };
    assert_ne!(
        lost_dates & before.history.acknowledged,
        0,
        "an acknowledged date was lost"
    );
    let lagged_at = step_of(&found, |a, _| a == Action::StandbyLags);
    let recorded_at = step_of(&found, |a, o| {
        matches!((a, o), (Action::Commit(_), Outcome::Recorded { .. }))
    });
    assert!(
        lagged_at < recorded_at,
        "the SUCCESS came after the standby stopped receiving"
    );
    assert!(after.settled.iter().all(Option::is_none));
    assert_eq!(found.len(), 8);
}

#[test]
fn a_plain_counter_issues_a_token_twice_after_an_asynchronous_promotion() {
    let found = Counterexample::find(
        Config::asynchronous(),
        &[Bug::TokenIgnoresTimeline],
        TOKENS_NEVER_GO_BACK,
    );
    let (_, _, outcome, _) = found.last();
    let token = granted(outcome).unwrap_or_else(|| panic!("ends with a grant, not {outcome:?}"));
    let promoted_at = step_of(&found, |a, _| a == Action::Promote);
    let issued_before = found.steps[..promoted_at]
        .iter()
        .filter(|&&(_, _, o, _)| granted(o) == Some(token))
        .count();
    assert_eq!(issued_before, 1, "token {token} was issued before the promotion too");
    assert_eq!(found.len(), 8);
}

#[test]
fn a_failed_record_over_a_success_whose_answer_was_lost_settles_the_date_twice() {
    let found = checked(&[Bug::FailedOverwritesSuccess], ONE_SUCCESS_PER_DATE);
    let unheard_at = step_of(&found, |a, o| {
        matches!(
            (a, o),
            (Action::CommitUnheard(_), Outcome::CommitUnheard { committed: true, .. })
        )
    });
    let Outcome::CommitUnheard { date, .. } = found.steps[unheard_at].2 else {
        unreachable!()
    };
    let (_, _, outcome, after) = found.last_by(Action::Commit);
    assert_eq!(outcome, Outcome::Recorded { date });
    assert_eq!(after.successes[usize::from(date)], 2);
    assert_eq!(found.len(), 11);
}

/// The index of the first step of `found` that is `wanted`.
fn step_of(found: &Counterexample, wanted: impl Fn(Action, Outcome) -> bool) -> usize {
    found
        .steps
        .iter()
        .position(|&(_, action, outcome, _)| wanted(action, outcome))
        .expect("the counterexample has the step")
}

//! What the counterexample tests share: the checker's shortest counterexample to a property,
//! printed as a story, and ways to ask about its steps.

#![allow(dead_code)] // each test binary uses its own part

use std::collections::BTreeSet;

use finesettle_model::{Action, Bug, Config, Outcome, Protocol, World, story};
use stateright::{Checker, HasDiscoveries, Model, Path};

/// The decisive steps of a counterexample: each step with what it answered and the world after.
pub struct Counterexample {
    pub steps: Vec<(World, Action, Outcome, World)>,
}

impl Counterexample {
    /// The shortest counterexample to `property` in `config`'s world built with `bugs`.
    pub fn find(config: Config, bugs: &[Bug], property: &'static str) -> Self {
        let model = Protocol::with_bugs(config, bugs);
        let checker = model
            .clone()
            .checker()
            .threads(1)
            .finish_when(HasDiscoveries::AnyOf(BTreeSet::from([property])))
            .spawn_bfs()
            .join();
        let path: Path<World, Action> = checker
            .discovery(property)
            .unwrap_or_else(|| panic!("{bugs:?}: no counterexample to \"{property}\""));
        assert!(story::replays(&model, &path), "the counterexample replays");
        println!(
            "{bugs:?} breaks \"{property}\" in {} steps:\n{}",
            path.clone().into_actions().len(),
            story::tell(&model, &path)
        );
        let states = path.into_vec();
        let steps = states
            .windows(2)
            .map(|pair| {
                let action = pair[0].1.expect("every state but the last has its action");
                let (after, outcome) = model.step(&pair[0].0, action).expect("enabled");
                (pair[0].0, action, outcome, after)
            })
            .collect();
        Counterexample { steps }
    }

    pub fn len(&self) -> usize {
        self.steps.len()
    }

    pub fn last(&self) -> (World, Action, Outcome, World) {
        *self.steps.last().expect("a counterexample has steps")
    }

    /// The last step, which must be `kind` (`Action::Commit`, say) of some replica: the world
    /// before, that replica, what the step answered, and the world after.
    pub fn last_by(&self, kind: fn(usize) -> Action) -> (World, usize, Outcome, World) {
        let (before, action, outcome, after) = self.last();
        let r = (0..before.replicas.len())
            .find(|&r| kind(r) == action)
            .unwrap_or_else(|| panic!("ends with {:?} of a replica, not {action:?}", kind(0)));
        (before, r, outcome, after)
    }

    pub fn has(&self, wanted: impl Fn(Action, Outcome) -> bool) -> bool {
        self.steps
            .iter()
            .any(|&(_, action, outcome, _)| wanted(action, outcome))
    }
}

pub fn checked(bugs: &[Bug], property: &'static str) -> Counterexample {
    Counterexample::find(Config::checked(), bugs, property)
}

/// The token of the lease replica `r` works under in `w`.
pub fn working_token(w: &World, r: usize) -> u8 {
    match w.replicas[r].job {
        finesettle_model::Job::Working { lease, .. } => lease.token,
        _ => panic!("r{r} was working"),
    }
}

/// When replica `r`, acquiring in `w`, sent its request.
pub fn asked_at(w: &World, r: usize) -> u8 {
    match w.replicas[r].job {
        finesettle_model::Job::Acquiring { asked_at, .. } => asked_at,
        _ => panic!("r{r} was acquiring"),
    }
}

/// The token a step granted, whether or not its replica heard the answer.
pub fn granted(outcome: Outcome) -> Option<u8> {
    match outcome {
        Outcome::Taken { token, .. } | Outcome::GrantUnheard { token, .. } => Some(token),
        _ => None,
    }
}

/// The date whose SUCCESS a step committed, whether or not its replica heard the answer.
pub fn committed(outcome: Outcome) -> Option<u8> {
    match outcome {
        Outcome::Recorded { date } | Outcome::CommitUnheard { date, committed: true } => Some(date),
        _ => None,
    }
}

//! Seeded random walks through the model: what the conformance replay holds the real code to.
//!
//! A walk starts from an initial state picked by the seed and takes an enabled step at random
//! until none is left (or `max_steps`). A uniform choice would spend the fault budget in the
//! first ticks, before any lease exists (a crash or a pause is enabled at every step), so a walk
//! disturbs the world (faults, their ends, operators' runs) only with probability
//! [`DISTURB_ONE_IN`]⁻¹ per step: faults then fall anywhere in a run, and stale holders, fenced
//! commits and refused renewals are common.
//!
//! The generator is SplitMix64, written out here so that a seed gives the same walk on every
//! machine and every version of every dependency: a failing seed printed by CI reproduces
//! anywhere.

use stateright::Model;

use crate::protocol::{Action, Outcome, Protocol};
use crate::world::World;

/// One step of a walk: the action, what the model answered, and the world after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    pub before: World,
    pub action: Action,
    pub outcome: Outcome,
    pub after: World,
}

/// A walk takes a disturbance (when one is enabled) once in this many steps.
pub const DISTURB_ONE_IN: u64 = 4;

/// A random walk of `model` from `seed`, at most `max_steps` long.
pub fn walk(model: &Protocol, seed: u64, max_steps: usize) -> Vec<Step> {
    let mut rng = SplitMix64(seed);
    let starts = model.init_states();
    let mut world = starts[rng.below(starts.len())];
    let mut steps = Vec::new();
    let mut actions = Vec::new();
    while steps.len() < max_steps {
        actions.clear();
        model.actions(&world, &mut actions);
        let (disturbances, protocol): (Vec<_>, Vec<_>) = actions
            .iter()
            .filter_map(|&action| {
                model
                    .step(&world, action)
                    .map(|(next, outcome)| (action, next, outcome))
            })
            .partition(|&(action, ..)| disturbs(action));
        let disturb = protocol.is_empty() || rng.next().is_multiple_of(DISTURB_ONE_IN);
        let choices = if disturb && !disturbances.is_empty() {
            disturbances
        } else {
            protocol
        };
        if choices.is_empty() {
            break;
        }
        let (action, after, outcome) = choices[rng.below(choices.len())];
        steps.push(Step {
            before: world,
            action,
            outcome,
            after,
        });
        world = after;
    }
    steps
}

/// Whether `action` is a disturbance rather than a step of the protocol: a fault, its end, or an
/// operator's run.
fn disturbs(action: Action) -> bool {
    matches!(
        action,
        Action::Pause(_)
            | Action::Resume(_)
            | Action::Crash(_)
            | Action::Restart(_)
            | Action::Refuse(_)
            | Action::Forget
            | Action::GrantUnheard(_)
            | Action::CommitUnheard(_)
            | Action::StandbyLags
            | Action::Promote
            | Action::Manual(..)
    )
}

/// SplitMix64 (Steele, Lea and Flood, 2014): tiny, and fixed forever.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number below `n` (`n > 0`); the modulo bias is irrelevant for lists this short.
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Config;

    #[test]
    fn the_same_seed_walks_the_same_path_and_another_seed_another() {
        let model = Protocol::new(Config::checked());
        let a = walk(&model, 7, 60);
        assert_eq!(a, walk(&model, 7, 60));
        assert_ne!(a, walk(&model, 8, 60));
        assert!(a.len() > 10, "a walk takes steps");
    }

    #[test]
    fn splitmix_matches_its_reference_values() {
        // the first outputs for seed 0, as published with the algorithm
        let mut rng = SplitMix64(0);
        assert_eq!(rng.next(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(rng.next(), 0x6E78_9E6A_A1B9_65F4);
    }
}

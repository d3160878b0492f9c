//! A path through the model told as a story: one line per step, with the tick, who acted, what
//! the step answered, and the lock store afterwards. This is how a counterexample is printed.
//!
//! ```text
//!   2. t=1 r0 fires (Cron), asking the lock for dates through 0  | store: token 0 ...
//!   3. t=1 r0 takes the lock: token 1, lease until t3, plans dates [0]  | store: token 1 held by r0 until t3; ...
//! ```

use std::fmt::Write;

use stateright::Model;
use stateright::Path;

use crate::protocol::{Action, Outcome, Protocol};
use crate::world::{Trigger, World};

/// The line for one step from `before` to `after`.
pub fn line(before: &World, action: Action, outcome: Outcome, after: &World) -> String {
    let t = before.now;
    let who = |r: usize| format!("t={t} r{r}");
    let mut text = match (action, outcome) {
        (Action::Tick, _) => format!("t={t} time passes: t={}", after.now),
        (Action::Fire(r) | Action::Manual(r, _), Outcome::Asked { target }) => {
            let trigger = match action {
                Action::Manual(..) => Trigger::Manual,
                _ => Trigger::Cron,
            };
            format!(
                "{} fires ({trigger:?}), asking the lock for dates through {target}",
                who(r)
            )
        }
        (Action::Answer(r), Outcome::Taken { token, until, dates }) => format!(
            "{} takes the lock: token {token}, lease until t{until}, plans dates {:?}",
            who(r),
            bits(dates)
        ),
        (Action::Answer(r), Outcome::Held { until }) => {
            format!(
                "{} finds the lock held by r{} until t{until}",
                who(r),
                before.store.holder
            )
        }
        (Action::Renew(r), outcome) => format!("{} renews: {outcome:?}", who(r)),
        (Action::Begin(r), outcome) => format!("{} starts its next date: {outcome:?}", who(r)),
        (Action::Commit(r), outcome) => format!("{} commits: {outcome:?}", who(r)),
        (Action::Refuse(r), Outcome::Refused { date }) => {
            format!("{} FAULT: the database refuses date {date}'s commit", who(r))
        }
        (Action::Release(r), Outcome::Released { owned }) => format!(
            "{} releases{}",
            who(r),
            if owned { "" } else { " a lease it no longer owns" }
        ),
        (Action::Forget, Outcome::Forgot { token }) => {
            format!("t={t} FAULT: the lock store loses the lease of token {token}")
        }
        (Action::GrantUnheard(r), Outcome::GrantUnheard { token, until }) => format!(
            "{} FAULT: the store grants token {token} until t{until}, but the answer is lost",
            who(r)
        ),
        (Action::CommitUnheard(r), Outcome::CommitUnheard { date, committed }) => format!(
            "{} FAULT: the database {} date {date}'s transaction, but the answer is lost{}",
            who(r),
            if committed { "commits" } else { "refuses" },
            if committed && after.settled[usize::from(date)].is_none() {
                "; the FAILED record replaces the SUCCESS"
            } else {
                ""
            }
        ),
        (Action::StandbyLags, _) => format!("t={t} the standby stops receiving (asynchronous replication)"),
        (Action::Promote, Outcome::Promoted { timeline, lost_dates }) => {
            let token = match (before.store.token, after.store.token) {
                (was, is) if was == is => format!("the store keeps token {is}"),
                (was, is) => format!("the store's token goes back from {was} to {is}"),
            };
            let lost = match bits(lost_dates) {
                dates if dates.is_empty() => "no SUCCESS lost".to_string(),
                dates => format!("the SUCCESS of dates {dates:?} lost"),
            };
            format!("t={t} FAULT: the database fails over to its standby, timeline {timeline}; {token}; {lost}")
        }
        (Action::Pause(r), _) => format!("{} FAULT: paused", who(r)),
        (Action::Crash(r), _) => format!("{} FAULT: crashed", who(r)),
        (Action::Resume(r), _) => format!("{} resumes", who(r)),
        (Action::Restart(r), _) => format!("{} restarts", who(r)),
        (action, outcome) => format!("t={t} {action:?}: {outcome:?}"),
    };
    let store = &after.store;
    let timeline = match store.timeline {
        1 => String::new(),
        timeline => format!(" (timeline {timeline})"),
    };
    let _ = write!(
        text,
        "  | store: token {}{timeline} held by r{} until t{}; SUCCESS per date {:?}",
        store.token,
        store.holder,
        store.locked_until,
        after
            .settled
            .iter()
            .map(|s| s.map_or("-".into(), |token| format!("by {token}")))
            .collect::<Vec<String>>()
    );
    text
}

/// A path of `model` as numbered lines, starting with the replicas' clock offsets.
pub fn tell(model: &Protocol, path: &Path<World, Action>) -> String {
    let steps = path.clone().into_vec();
    let first = &steps[0].0;
    let skews: Vec<i8> = first
        .replicas(model.config.replicas)
        .map(|(_, replica)| replica.skew)
        .collect();
    let mut story = format!("replica clock offsets (ticks): {skews:?}\n");
    for (n, pair) in steps.windows(2).enumerate() {
        let (before, Some(action)) = (&pair[0].0, pair[0].1) else {
            continue;
        };
        let (after, outcome) = model.step(before, action).expect("a path's steps are enabled");
        debug_assert_eq!(after, pair[1].0);
        let _ = writeln!(story, "{:3}. {}", n + 1, line(before, action, outcome, &after));
    }
    story
}

/// The steps of a path, for tests that assert a counterexample's shape.
pub fn actions(path: &Path<World, Action>) -> Vec<Action> {
    path.clone().into_actions()
}

/// The dates of a bit set, oldest first.
pub fn bits(set: u8) -> Vec<u8> {
    (0..8).filter(|d| set & 1 << d != 0).collect()
}

/// Whether `model` answers `path`'s steps as it did when the path was found (the path replays).
pub fn replays(model: &Protocol, path: &Path<World, Action>) -> bool {
    let steps = path.clone().into_vec();
    steps.windows(2).all(|pair| match pair[0].1 {
        Some(action) => model.next_state(&pair[0].0, action).as_ref() == Some(&pair[1].0),
        None => true,
    })
}

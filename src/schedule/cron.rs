//! Cron schedules evaluated on the wall clock of a business time zone.
//!
//! Expressions have six fields with seconds first (`sec min hour day-of-month month day-of-week`,
//! e.g. `0 0 2 * * *`) or seven with a trailing year. Five-field expressions are rejected rather
//! than guessed at: `0 2 * * *` is 02:00 to classic cron but a malformed seconds-first
//! expression to us and to tokio-cron-scheduler, and a guess either way can move the nightly run
//! by hours. Field syntax is croner's: `*`, lists, ranges, steps, `?`/`L`/`W` in day-of-month,
//! `#`/`L` in day-of-week, `JAN`-`DEC`, `SUN`-`SAT` (0-6 = Sunday-Saturday, 7 = Sunday). When
//! both day-of-month and day-of-week are restricted, a day matching *either* fires (classic
//! cron, croner's default), unlike tokio-cron-scheduler's own cron jobs, which require both.
//!
//! # Daylight saving time
//!
//! Every slot is computed from the zone's real UTC offset at that instant; no offset is ever
//! frozen. Two kinds of expressions are treated differently around a clock change, the rules
//! Vixie/ISC cron and croner use:
//!
//! * **Wall-clock** expressions — second, minute and hour are each a plain number or a comma
//!   list (`0 0 2 * * *`, `0 30 1,13 * * *`): each listed local time is a once-a-day
//!   appointment. A local time that **does not exist** (spring forward) is **shifted, not
//!   skipped**: it fires once at the first instant after the gap (`0 30 2 * * *` in
//!   America/New_York fires on 2026-03-08 at 03:00 EDT = `07:00:00Z`; several listed times in one
//!   gap collapse into that one fire). A local time that **occurs twice** (fall back) **fires
//!   once**, at its first occurrence (`0 30 1 * * *` fires on 2026-11-01 at 01:30 EDT =
//!   `05:30:00Z` only). So a daily wall-clock expression fires exactly once per local date.
//! * **Interval** expressions — any of second, minute, hour uses `*`, a range or a step
//!   (`*/1 * * * * *`, `0 */20 1 * * *`): they follow elapsed time. A local time inside a gap
//!   never happens and is skipped; a repeated local time fires in both passes.
//!
//! # How
//!
//! croner's own zone search gets several of these cases wrong (listed, each with the instant it
//! answers, by `croner_zone_search_breaks_the_rules` in `tests/it/schedule/dst.rs`). So croner only
//! lists matching *naive* local times, on a UTC carrier where it is exact, and chrono-tz
//! resolves each one ([`TimeZone::from_local_datetime`], [`GapInfo`]) by the rules above.
//! Resolving in order of local time yields slots in order of time, except that the second
//! passes of a repeated hour come after all of its first passes: `Walk` sorts them in.

use std::collections::BTreeSet;
use std::fmt;

use chrono::{
    DateTime, FixedOffset, LocalResult, NaiveDate, NaiveDateTime, Offset, SubsecRound, TimeDelta, TimeZone, Utc,
};
use chrono_tz::{GapInfo, Tz};
use croner::Cron;
use croner::parser::{CronParser, Seconds};

/// Errors from parsing a schedule or running the fire loop.
#[derive(Debug, thiserror::Error)]
pub enum ScheduleError {
    /// A classic five-field expression: ambiguous with our seconds-first format.
    #[error(
        "cron expression `{expr}` has five fields; finesettle needs six with seconds first \
         (`sec min hour day-of-month month day-of-week`, e.g. `0 0 2 * * *` for 02:00 daily); \
         put `0 ` in front of a classic five-field expression"
    )]
    FiveFields { expr: String },
    /// Neither six nor seven fields.
    #[error(
        "cron expression `{expr}` has {fields} fields; expected six \
         (`sec min hour day-of-month month day-of-week`, e.g. `0 0 2 * * *`) or seven (with a year)"
    )]
    FieldCount { expr: String, fields: usize },
    /// croner rejected a field.
    #[error("invalid cron expression `{expr}`: {reason}")]
    Invalid { expr: String, reason: String },
    /// The expression is well formed but matches no time at all (e.g. `0 0 0 30 2 *`).
    #[error("cron expression `{expr}` never matches any time")]
    NeverMatches { expr: String },
    /// The schedule has no slot after now (e.g. its year field is in the past).
    #[error("cron expression `{expr}` has no upcoming fire time")]
    NoUpcomingSlot { expr: String },
}

/// A cron expression bound to a time zone; see the module docs for the DST rules.
#[derive(Clone, Debug)]
pub struct CronSchedule {
    expr: String,
    tz: Tz,
    cron: Cron,
    /// Wall-clock expressions fire once per local time (see module docs).
    wall_clock: bool,
}

impl CronSchedule {
    /// Parses a six-field (seconds first) or seven-field (plus year) expression in `tz`.
    pub fn parse(expr: &str, tz: Tz) -> Result<Self, ScheduleError> {
        let fields: Vec<&str> = expr.split_whitespace().collect();
        let rejected = || expr.to_owned();
        match fields.len() {
            6 | 7 => {}
            5 => return Err(ScheduleError::FiveFields { expr: rejected() }),
            n => {
                return Err(ScheduleError::FieldCount {
                    expr: rejected(),
                    fields: n,
                });
            }
        }
        let cron = CronParser::builder()
            .seconds(Seconds::Required)
            .build()
            .parse(expr)
            .map_err(|e| ScheduleError::Invalid {
                expr: rejected(),
                reason: e.to_string(),
            })?;
        // Rejecting impossible dates here keeps later searches from grinding through croner's
        // whole search range on every call.
        if cron.find_next_occurrence(&DateTime::<Utc>::UNIX_EPOCH, true).is_err() {
            return Err(ScheduleError::NeverMatches { expr: rejected() });
        }
        let wall_clock = fields[..3]
            .iter()
            .all(|f| f.bytes().all(|b| b.is_ascii_digit() || b == b','));
        Ok(Self {
            expr: fields.join(" "),
            tz,
            cron,
            wall_clock,
        })
    }

    /// The expression, with whitespace normalised to single spaces.
    pub fn expr(&self) -> &str {
        &self.expr
    }

    /// The zone the expression is evaluated in.
    pub fn tz(&self) -> Tz {
        self.tz
    }

    /// Whether this is a wall-clock expression rather than an interval one (see the module docs).
    pub fn is_wall_clock(&self) -> bool {
        self.wall_clock
    }

    /// The first slot strictly after `after`.
    pub fn next_after(&self, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.slots_after(after).next()
    }

    /// The first `n` slots strictly after `after`, in order.
    pub fn upcoming(&self, after: DateTime<Utc>, n: usize) -> Vec<DateTime<Utc>> {
        self.slots_after(after).take(n).collect()
    }

    /// The most recent slot at or before `at` (used for catch-up and MISSED alerts).
    pub fn latest_at_or_before(&self, at: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let at = at.trunc_subsecs(0);
        // A slot in the first pass of a repeated hour comes from a local time up to the size of
        // the change later than `at`'s own: start from the first pass's offset.
        let (first_pass, _) = self.pass_offsets(at);
        let start = at.naive_utc().checked_add_offset(first_pass);
        let cursor = start.and_then(|s| s.checked_add_signed(TimeDelta::seconds(1)));
        Walk::new(self, false, cursor).find(|slot| *slot <= at)
    }

    /// Slots in `(from, to]`, oldest first, at most `limit` of them.
    pub fn slots_between(&self, from: DateTime<Utc>, to: DateTime<Utc>, limit: usize) -> Vec<DateTime<Utc>> {
        self.slots_after(from)
            .take_while(|slot| *slot <= to)
            .take(limit)
            .collect()
    }

    /// Which slot to fire when the wake-up for `armed` comes at `now`: the latest slot that has
    /// passed, and how many earlier slots (starting with `armed`) that skips, up to 100,000.
    pub fn catch_up(&self, armed: DateTime<Utc>, now: DateTime<Utc>) -> (DateTime<Utc>, usize) {
        match self.latest_at_or_before(now) {
            // Slots in [armed, latest) = slots in (armed, latest].
            Some(latest) if latest > armed => (latest, self.slots_between(armed, latest, 100_000).len()),
            _ => (armed, 0),
        }
    }

    /// Slots strictly after `after`, oldest first.
    fn slots_after(&self, after: DateTime<Utc>) -> impl Iterator<Item = DateTime<Utc>> + '_ {
        let after = after.trunc_subsecs(0);
        // A slot in the second pass of a repeated hour, or the shifted fire of a gap that starts
        // right after `after`, comes from a local time up to the size of the change earlier
        // than the one just after `after`: start from the smaller offset.
        let (_, last_pass) = self.pass_offsets(after);
        let cursor = after.naive_utc().checked_add_offset(last_pass);
        Walk::new(self, true, cursor).skip_while(move |slot| *slot <= after)
    }

    /// The offsets of the first and of the last instant whose local time is that of `t`: they
    /// differ when `t`'s local time is repeated after the clocks went back.
    fn pass_offsets(&self, t: DateTime<Utc>) -> (FixedOffset, FixedOffset) {
        let own = t.with_timezone(&self.tz);
        match self.tz.from_local_datetime(&own.naive_local()) {
            LocalResult::Ambiguous(first, last) => (first.offset().fix(), last.offset().fix()),
            _ => (own.offset().fix(), own.offset().fix()),
        }
    }

    /// The instants a matching naive local time fires at, by the rules in the module docs.
    fn fires_at(&self, local: NaiveDateTime) -> LocalResult<DateTime<Utc>> {
        match self.tz.from_local_datetime(&local).map(|t| t.to_utc()) {
            LocalResult::Ambiguous(first, _) if self.wall_clock => LocalResult::Single(first),
            LocalResult::None if self.wall_clock => match GapInfo::new(&local, &self.tz).and_then(|gap| gap.end) {
                Some(end) => LocalResult::Single(end.to_utc()),
                None => LocalResult::None,
            },
            fires => fires,
        }
    }
}

impl fmt::Display for CronSchedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.expr, self.tz)
    }
}

/// The business date settled by a fire at `slot`: the local date of `slot` in `tz`, minus one
/// day (the 02:00 run settles yesterday).
pub fn settle_target(slot: DateTime<Utc>, tz: Tz) -> NaiveDate {
    let local = slot.with_timezone(&tz).date_naive();
    local.pred_opt().unwrap_or(local)
}

/// The slots of a schedule in time order, forwards or backwards: the instants of the naive local
/// times croner finds one by one in that direction (its own iterator skips every other second),
/// through a set that puts the second passes of a repeated hour after all of its first passes,
/// and fires a gap's end once.
struct Walk<'a> {
    schedule: &'a CronSchedule,
    forward: bool,
    /// The last naive local time visited; `None` once croner finds no more.
    cursor: Option<NaiveDateTime>,
    /// The earliest (walking backwards: latest) instant of the last match: no slot still to be
    /// found comes before it.
    frontier: Option<DateTime<Utc>>,
    found: BTreeSet<DateTime<Utc>>,
}

impl<'a> Walk<'a> {
    /// From the naive local times after (backwards: before) `cursor`.
    fn new(schedule: &'a CronSchedule, forward: bool, cursor: Option<NaiveDateTime>) -> Self {
        let (frontier, found) = (None, BTreeSet::new());
        Self {
            schedule,
            forward,
            cursor,
            frontier,
            found,
        }
    }
}

impl Iterator for Walk<'_> {
    type Item = DateTime<Utc>;

    fn next(&mut self) -> Option<DateTime<Utc>> {
        loop {
            let mut ends = self.found.iter().copied();
            let edge = if self.forward { ends.next() } else { ends.next_back() };
            let settled = |slot| self.frontier.is_some_and(|f| slot != f && (slot < f) == self.forward);
            if let Some(slot) = edge.filter(|&slot| self.cursor.is_none() || settled(slot)) {
                self.found.remove(&slot);
                return Some(slot);
            }
            let (carrier, cron) = (self.cursor?.and_utc(), &self.schedule.cron);
            let found = if self.forward {
                cron.find_next_occurrence(&carrier, false)
            } else {
                cron.find_previous_occurrence(&carrier, false)
            };
            self.cursor = found.ok().map(|t| t.naive_utc());
            let Some(local) = self.cursor else { continue };
            let fires = self.schedule.fires_at(local);
            let edge = if self.forward { fires.earliest() } else { fires.latest() };
            self.frontier = edge.or(self.frontier);
            self.found.extend(fires.earliest().into_iter().chain(fires.latest()));
        }
    }
}

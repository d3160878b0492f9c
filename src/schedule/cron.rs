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
//!   appointment.
//!   - A local time that **does not exist** (spring forward) is **shifted, not skipped**: it
//!     fires once at the first instant after the gap. `0 30 2 * * *` in America/New_York fires
//!     on 2026-03-08 at 03:00:00 EDT = `2026-03-08T07:00:00Z`. Several listed times inside one
//!     gap collapse into that one fire.
//!   - A local time that **occurs twice** (fall back) **fires once**, at its first occurrence.
//!     `0 30 1 * * *` in America/New_York fires on 2026-11-01 at 01:30 EDT =
//!     `2026-11-01T05:30:00Z` only, never at 01:30 EST (`06:30Z`). `0 30 2 * * *` is after the
//!     repeated hour: `2026-11-01T07:30:00Z` (02:30 EST).
//!   - So a daily wall-clock expression fires exactly once per local date.
//! * **Interval** expressions — any of second, minute, hour uses `*`, a range or a step
//!   (`*/1 * * * * *`, `0 */20 1 * * *`): they follow elapsed time. A local time inside a gap
//!   never happens and is skipped; a repeated local time fires in both passes (so
//!   `*/1 * * * * *` fires every real second straight through both changes, and
//!   `0 */20 1 * * *` fires six times on 2026-11-01 in New York).
//!
//! # What croner 3 does, and what we correct
//!
//! croner is used to parse and to match fields, but its time-zone search is not used directly:
//!
//! * For a daily wall-clock expression stepped from the previous fire, croner agrees with the
//!   instants above (gap → first instant after the gap, repeated time → first occurrence). Its
//!   job classification differs only for lists (`0 30 1,13 * * *` is an "interval" job to
//!   croner and would fire twice at 01:30 on fall-back day); we treat lists as wall-clock.
//! * Asked for the next occurrence after an instant in the *second* pass of a repeated hour,
//!   croner returns an instant from the *first* pass, i.e. earlier than its input
//!   (`0 30 1 * * *` after `2026-11-01T06:10Z` → `05:30Z`).
//! * For interval expressions it loses the second pass: after `2026-11-01T05:59:59Z` (01:59:59
//!   EDT) it jumps to `07:00:00Z`, and its iterator alternates between the passes
//!   (`05:00:01Z, 06:00:01Z, 05:00:03Z, …`).
//! * Its backward search maps a time in a gap to the last instant *before* the gap
//!   (`06:59:59Z`), inconsistent with its forward search (`07:00:00Z`).
//! * It keeps sub-second parts of its input, so "next after 00:00:00.5" is "00:00:01.5".
//!
//! We therefore run croner on naive local times only (where it is exact) and walk the zone's
//! constant-offset periods ourselves, in both directions with the same rules, on whole seconds.
//! Offset changes are located by probing every six hours and bisecting, which assumes a zone
//! never changes its offset twice within six hours (true of every zone in the tz database).

use std::fmt;

use chrono::{DateTime, LocalResult, NaiveDate, Offset, TimeZone, Utc};
use chrono_tz::Tz;
use croner::Cron;
use croner::parser::{CronParser, Seconds};

/// Distance between two offset probes; see the module docs for the assumption it encodes.
const PROBE_SECS: i64 = 6 * 3600;
/// How far past the last naive match we still look for an offset change that could revisit
/// earlier local times. Offset changes are far smaller than this.
const NO_MATCH_HORIZON_SECS: i64 = 2 * 86_400;
/// Bound on the segment walk (each step crosses one offset change or one suppressed repeat).
const MAX_STEPS: usize = 100_000;

/// Errors from parsing a schedule or running the fire loop.
#[derive(Debug, thiserror::Error)]
pub enum ScheduleError {
    /// A classic five-field expression: ambiguous with our seconds-first format.
    #[error(
        "cron expression `{expr}` has five fields; finesettle needs six with seconds first \
         (`sec min hour day-of-month month day-of-week`, e.g. `0 0 2 * * *` for 02:00 daily); \
         put `0 ` in front of a classic five-field expression"
    )]
    FiveFields {
        /// The rejected expression.
        expr: String,
    },
    /// Neither six nor seven fields.
    #[error(
        "cron expression `{expr}` has {fields} fields; expected six \
         (`sec min hour day-of-month month day-of-week`, e.g. `0 0 2 * * *`) or seven (with a year)"
    )]
    FieldCount {
        /// The rejected expression.
        expr: String,
        /// How many whitespace-separated fields it has.
        fields: usize,
    },
    /// croner rejected a field.
    #[error("invalid cron expression `{expr}`: {reason}")]
    Invalid {
        /// The rejected expression.
        expr: String,
        /// croner's explanation.
        reason: String,
    },
    /// The expression is well formed but matches no time at all (e.g. `0 0 0 30 2 *`).
    #[error("cron expression `{expr}` never matches any time")]
    NeverMatches {
        /// The rejected expression.
        expr: String,
    },
    /// The schedule has no slot after now (e.g. its year field is in the past).
    #[error("cron expression `{expr}` has no upcoming fire time")]
    NoUpcomingSlot {
        /// The expression.
        expr: String,
    },
    /// tokio-cron-scheduler failed to start.
    #[error("scheduler error: {0}")]
    Scheduler(String),
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
        match fields.len() {
            6 | 7 => {}
            5 => {
                return Err(ScheduleError::FiveFields { expr: expr.to_owned() });
            }
            n => {
                return Err(ScheduleError::FieldCount {
                    expr: expr.to_owned(),
                    fields: n,
                });
            }
        }
        let cron = CronParser::builder()
            .seconds(Seconds::Required)
            .build()
            .parse(expr)
            .map_err(|e| ScheduleError::Invalid {
                expr: expr.to_owned(),
                reason: e.to_string(),
            })?;
        // Rejecting impossible dates here keeps later searches from grinding through croner's
        // whole search range on every call.
        let epoch = DateTime::<Utc>::UNIX_EPOCH;
        if cron.find_next_occurrence(&epoch, true).is_err() {
            return Err(ScheduleError::NeverMatches { expr: expr.to_owned() });
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

    /// The first slot strictly after `after`.
    pub fn next_after(&self, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.next_after_secs(after.timestamp()).and_then(to_utc)
    }

    /// The first `n` slots strictly after `after`, in order.
    pub fn upcoming(&self, after: DateTime<Utc>, n: usize) -> Vec<DateTime<Utc>> {
        let mut out = Vec::with_capacity(n.min(1024));
        let mut cursor = after.timestamp();
        while out.len() < n {
            let Some(s) = self.next_after_secs(cursor) else {
                break;
            };
            let Some(t) = to_utc(s) else { break };
            out.push(t);
            cursor = s;
        }
        out
    }

    /// The most recent slot at or before `at` (used for catch-up and MISSED alerts).
    ///
    /// Searches backwards, so it costs the same for a daily as for a per-second schedule.
    pub fn latest_at_or_before(&self, at: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.latest_at_or_before_secs(at.timestamp()).and_then(to_utc)
    }

    /// Slots in `(from_exclusive, to_inclusive]`, oldest first, at most `limit` of them.
    pub fn slots_between(
        &self,
        from_exclusive: DateTime<Utc>,
        to_inclusive: DateTime<Utc>,
        limit: usize,
    ) -> Vec<DateTime<Utc>> {
        let end = to_inclusive.timestamp();
        let mut out = Vec::new();
        let mut cursor = from_exclusive.timestamp();
        while out.len() < limit {
            match self.next_after_secs(cursor) {
                Some(s) if s <= end => {
                    let Some(t) = to_utc(s) else { break };
                    out.push(t);
                    cursor = s;
                }
                _ => break,
            }
        }
        out
    }

    // --- the search, on whole Unix seconds -------------------------------------------------
    //
    // Within a period of constant offset `o`, instant `s` has local time `s + o`, so the next
    // slot is croner's next naive match minus `o` — provided it falls before the period ends.
    // Otherwise we move to the next period (after adding the gap fire, for wall-clock
    // expressions). The backward search mirrors this.

    fn next_after_secs(&self, after: i64) -> Option<i64> {
        let mut cursor = after;
        for _ in 0..MAX_STEPS {
            let start = cursor.checked_add(1)?;
            // A gap ending exactly at `start` fires at `start`, before any natural slot.
            if self.wall_clock && self.gap_has_match(start) {
                return Some(start);
            }
            let o = self.offset(start);
            let natural = self.naive_next(start.checked_add(o)?).map(|n| n - o);
            let horizon = natural.unwrap_or(start.saturating_add(NO_MATCH_HORIZON_SECS));
            let change = self.first_change_after(start, horizon);
            if let Some(s) = natural.filter(|&s| change.is_none_or(|c| s < c)) {
                if self.is_suppressed_repeat(s) {
                    cursor = s;
                    continue;
                }
                return Some(s);
            }
            // Continue in the next period; its first iteration handles a gap at its start.
            cursor = change? - 1;
        }
        None
    }

    fn latest_at_or_before_secs(&self, at: i64) -> Option<i64> {
        let mut cursor = at;
        for _ in 0..MAX_STEPS {
            let o = self.offset(cursor);
            let natural = self.naive_prev(cursor.checked_add(o)?).map(|n| n - o);
            let horizon = natural.unwrap_or(cursor.saturating_sub(NO_MATCH_HORIZON_SECS));
            let period_start = self.period_start_after(cursor, horizon);
            if let Some(s) = natural.filter(|&s| period_start.is_none_or(|p| s >= p)) {
                if self.is_suppressed_repeat(s) {
                    cursor = s - 1;
                    continue;
                }
                return Some(s);
            }
            let period_start = period_start?;
            if self.wall_clock && self.gap_has_match(period_start) {
                return Some(period_start);
            }
            cursor = period_start - 1;
        }
        None
    }

    /// Total UTC offset in seconds at instant `t`.
    fn offset(&self, t: i64) -> i64 {
        let naive = DateTime::from_timestamp(t, 0)
            .unwrap_or(DateTime::<Utc>::UNIX_EPOCH)
            .naive_utc();
        i64::from(self.tz.offset_from_utc_datetime(&naive).fix().local_minus_utc())
    }

    /// First naive local second `>= local` matching the fields (as seconds since the epoch of
    /// the naive calendar). croner is exact here: a UTC carrier has no gaps or repeats.
    fn naive_next(&self, local: i64) -> Option<i64> {
        let carrier = DateTime::from_timestamp(local, 0)?;
        self.cron
            .find_next_occurrence(&carrier, true)
            .ok()
            .map(|d| d.timestamp())
    }

    /// Last naive local second `<= local` matching the fields.
    fn naive_prev(&self, local: i64) -> Option<i64> {
        let carrier = DateTime::from_timestamp(local, 0)?;
        self.cron
            .find_previous_occurrence(&carrier, true)
            .ok()
            .map(|d| d.timestamp())
    }

    /// Whether `s` is the second occurrence of a repeated local time of a wall-clock
    /// expression, which fires only at the first occurrence.
    fn is_suppressed_repeat(&self, s: i64) -> bool {
        if !self.wall_clock {
            return false;
        }
        let Some(local) = s
            .checked_add(self.offset(s))
            .and_then(|l| DateTime::from_timestamp(l, 0))
        else {
            return false;
        };
        match self.tz.from_local_datetime(&local.naive_utc()) {
            LocalResult::Ambiguous(first, _) => first.timestamp() != s,
            _ => false,
        }
    }

    /// Whether the offset change at instant `change` opens a gap in local time containing a
    /// matching local time (which then fires at `change`, the first instant after the gap).
    fn gap_has_match(&self, change: i64) -> bool {
        let before = self.offset(change - 1);
        let after = self.offset(change);
        if after <= before {
            return false;
        }
        // The local times [change + before, change + after) do not exist.
        self.naive_next(change + before).is_some_and(|n| n < change + after)
    }

    /// First instant in `(from, until]` whose offset differs from the offset at `from`.
    fn first_change_after(&self, from: i64, until: i64) -> Option<i64> {
        let o = self.offset(from);
        let mut lo = from;
        while lo < until {
            let hi = lo.saturating_add(PROBE_SECS).min(until);
            if self.offset(hi) != o {
                return Some(bisect(lo, hi, |x| self.offset(x) != o));
            }
            lo = hi;
        }
        None
    }

    /// Start of the constant-offset period containing `to`, if it starts in `(since, to]`.
    fn period_start_after(&self, to: i64, since: i64) -> Option<i64> {
        let o = self.offset(to);
        let mut hi = to;
        while hi > since {
            let lo = hi.saturating_sub(PROBE_SECS).max(since);
            if self.offset(lo) != o {
                return Some(bisect(lo, hi, |x| self.offset(x) == o));
            }
            hi = lo;
        }
        None
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

/// Smallest `x` in `(lo, hi]` with `pred(x)`, given `!pred(lo)` and `pred(hi)` and a single
/// switch in between.
fn bisect(mut lo: i64, mut hi: i64, pred: impl Fn(i64) -> bool) -> i64 {
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if pred(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

fn to_utc(secs: i64) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp(secs, 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{Duration, NaiveDateTime, TimeDelta};
    use chrono_tz::America::New_York;
    use chrono_tz::Asia::Shanghai;
    use chrono_tz::Australia::Lord_Howe;
    use chrono_tz::Europe::London;

    fn local(t: DateTime<Utc>, tz: Tz) -> NaiveDateTime {
        t.with_timezone(&tz).naive_local()
    }

    fn utc(s: &str) -> DateTime<Utc> {
        s.parse().expect("valid RFC 3339 instant")
    }

    fn sched(expr: &str, tz: Tz) -> CronSchedule {
        CronSchedule::parse(expr, tz).expect("valid expression")
    }

    fn strs(v: &[DateTime<Utc>]) -> Vec<String> {
        v.iter().map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string()).collect()
    }

    // --- parsing ------------------------------------------------------------------------

    #[test]
    fn parses_six_and_seven_fields() {
        let s = sched("0  0 2 * * *", Shanghai);
        assert_eq!(s.expr(), "0 0 2 * * *");
        assert_eq!(s.tz(), Shanghai);
        assert_eq!(s.to_string(), "0 0 2 * * * (Asia/Shanghai)");
        let y = sched("0 0 2 * * * 2030", Shanghai);
        assert_eq!(
            y.next_after(utc("2026-06-01T00:00:00Z")),
            Some(utc("2029-12-31T18:00:00Z"))
        );
    }

    #[test]
    fn rejects_five_fields_with_a_clear_message() {
        let err = CronSchedule::parse("0 2 * * *", Shanghai).unwrap_err();
        assert!(matches!(err, ScheduleError::FiveFields { .. }), "{err:?}");
        let msg = err.to_string();
        assert!(msg.contains("five fields"), "{msg}");
        assert!(msg.contains("seconds first"), "{msg}");
    }

    #[test]
    fn rejects_other_field_counts_and_bad_fields() {
        for bad in ["", "@daily", "* * * *", "0 0 0 * * * 2030 1"] {
            let err = CronSchedule::parse(bad, Shanghai).unwrap_err();
            assert!(matches!(err, ScheduleError::FieldCount { .. }), "{bad:?}: {err:?}");
        }
        for bad in ["0 0 25 * * *", "0 61 2 * * *", "x 0 2 * * *", "0 0 2 * 13 *"] {
            let err = CronSchedule::parse(bad, Shanghai).unwrap_err();
            assert!(matches!(err, ScheduleError::Invalid { .. }), "{bad:?}: {err:?}");
        }
    }

    #[test]
    fn rejects_expressions_that_never_match() {
        let err = CronSchedule::parse("0 0 0 30 2 *", Shanghai).unwrap_err();
        assert!(matches!(err, ScheduleError::NeverMatches { .. }), "{err:?}");
    }

    #[test]
    fn classifies_wall_clock_and_interval_expressions() {
        for e in ["0 0 2 * * *", "0 30 1,13 * * *", "0 0 2 1 * MON", "00 00 02 * * * 2030"] {
            assert!(sched(e, New_York).wall_clock, "{e}");
        }
        for e in ["*/1 * * * * *", "0 */20 1 * * *", "0 0 1-3 * * *", "0 0-59/30 2 * * *"] {
            assert!(!sched(e, New_York).wall_clock, "{e}");
        }
    }

    #[test]
    fn day_of_month_or_day_of_week() {
        // Classic cron: both restricted means either matches. 2026-06-01 is a Monday.
        let s = sched("0 0 12 15 * MON", chrono_tz::UTC);
        assert_eq!(
            strs(&s.upcoming(utc("2026-05-31T00:00:00Z"), 3)),
            ["2026-06-01T12:00:00Z", "2026-06-08T12:00:00Z", "2026-06-15T12:00:00Z"]
        );
    }

    // --- Shanghai: the production schedule ---------------------------------------------------

    #[test]
    fn shanghai_two_am_is_eighteen_utc_once_a_day_for_400_days() {
        let s = sched("0 0 2 * * *", Shanghai);
        let start = utc("2026-01-01T00:00:00Z");
        let slots = s.upcoming(start, 400);
        assert_eq!(slots.len(), 400);
        assert_eq!(slots[0], utc("2026-01-01T18:00:00Z"));
        for (i, slot) in slots.iter().enumerate() {
            let expected = utc("2026-01-01T18:00:00Z") + Duration::days(i as i64);
            assert_eq!(*slot, expected, "slot {i}");
            let l = local(*slot, Shanghai);
            assert_eq!(l.time(), chrono::NaiveTime::from_hms_opt(2, 0, 0).unwrap());
            // Fires at 18:00 UTC of the day before its local date.
            assert_eq!(l.date(), slot.date_naive().succ_opt().unwrap());
        }
        // One local date per fire, consecutive: no double fire, no gap.
        for w in slots.windows(2) {
            assert_eq!(
                local(w[1], Shanghai).date(),
                local(w[0], Shanghai).date().succ_opt().unwrap()
            );
        }
        // The same 400 slots come out of slots_between and of repeated next_after.
        let last = *slots.last().unwrap();
        assert_eq!(s.slots_between(start, last, 10_000), slots);
        let mut cursor = start;
        for slot in &slots {
            cursor = s.next_after(cursor).unwrap();
            assert_eq!(cursor, *slot);
        }
    }

    #[test]
    fn settle_target_is_the_previous_local_date() {
        let d = |s: &str| s.parse::<NaiveDate>().unwrap();
        // 02:00 Shanghai on 2026-03-02 is 18:00Z on 2026-03-01 and settles 2026-03-01.
        assert_eq!(settle_target(utc("2026-03-01T18:00:00Z"), Shanghai), d("2026-03-01"));
        assert_eq!(settle_target(utc("2026-01-01T15:59:59Z"), Shanghai), d("2025-12-31"));
        assert_eq!(settle_target(utc("2026-01-01T16:00:00Z"), Shanghai), d("2026-01-01"));
        // New York, the gap-day fire at 03:00 EDT still settles the previous date.
        assert_eq!(settle_target(utc("2026-03-08T07:00:00Z"), New_York), d("2026-03-07"));
        // Across a year boundary and a leap day.
        assert_eq!(settle_target(utc("2028-02-29T18:00:00Z"), Shanghai), d("2028-02-29"));
    }

    // --- New York: DST ---------------------------------------------------------------------

    /// croner's own zone-aware answers, stepping from one fire to the next.
    fn croner_chain(expr: &str, tz: Tz, after: &str, n: usize) -> Vec<DateTime<Utc>> {
        let cron = CronParser::builder()
            .seconds(Seconds::Required)
            .build()
            .parse(expr)
            .unwrap();
        let mut cur = utc(after).with_timezone(&tz);
        (0..n)
            .map(|_| {
                cur = cron.find_next_occurrence(&cur, false).unwrap();
                cur.with_timezone(&Utc)
            })
            .collect()
    }

    #[test]
    fn new_york_spring_forward_missing_time_shifts_to_end_of_gap() {
        let s = sched("0 30 2 * * *", New_York);
        let expected = [
            "2026-03-07T07:30:00Z", // 02:30 EST
            "2026-03-08T07:00:00Z", // 02:30 does not exist: 03:00:00 EDT, first instant after
            "2026-03-09T06:30:00Z", // 02:30 EDT
        ];
        let got = s.upcoming(utc("2026-03-07T00:00:00Z"), 3);
        assert_eq!(strs(&got), expected);
        // croner, stepped from fire to fire, produces the same instants.
        assert_eq!(
            strs(&croner_chain("0 30 2 * * *", New_York, "2026-03-07T00:00:00Z", 3)),
            expected
        );
        // Boundaries around the shifted fire.
        assert_eq!(
            s.next_after(utc("2026-03-08T06:59:59Z")),
            Some(utc("2026-03-08T07:00:00Z"))
        );
        assert_eq!(
            s.next_after(utc("2026-03-08T07:00:00Z")),
            Some(utc("2026-03-09T06:30:00Z"))
        );
        assert_eq!(
            s.latest_at_or_before(utc("2026-03-08T07:00:00Z")),
            Some(utc("2026-03-08T07:00:00Z"))
        );
        assert_eq!(
            s.latest_at_or_before(utc("2026-03-08T06:59:59Z")),
            Some(utc("2026-03-07T07:30:00Z"))
        );
        assert_eq!(
            s.latest_at_or_before(utc("2026-03-09T06:29:59Z")),
            Some(utc("2026-03-08T07:00:00Z"))
        );
    }

    #[test]
    fn new_york_two_am_on_spring_forward_day() {
        // 02:00 itself is the first missing second: fires at 03:00 EDT, which is the same UTC
        // instant as the previous day's 02:00 EST — still one fire per local date.
        let s = sched("0 0 2 * * *", New_York);
        assert_eq!(
            strs(&s.upcoming(utc("2026-03-07T00:00:00Z"), 3)),
            ["2026-03-07T07:00:00Z", "2026-03-08T07:00:00Z", "2026-03-09T06:00:00Z"]
        );
    }

    #[test]
    fn new_york_fall_back_two_thirty_fires_once() {
        let s = sched("0 30 2 * * *", New_York);
        let expected = [
            "2026-10-31T06:30:00Z", // 02:30 EDT
            "2026-11-01T07:30:00Z", // 02:30 EST, after the repeated hour
            "2026-11-02T07:30:00Z", // 02:30 EST
        ];
        assert_eq!(strs(&s.upcoming(utc("2026-10-31T00:00:00Z"), 3)), expected);
        assert_eq!(
            strs(&croner_chain("0 30 2 * * *", New_York, "2026-10-31T00:00:00Z", 3)),
            expected
        );
    }

    #[test]
    fn new_york_fall_back_repeated_one_thirty_fires_once_at_first_occurrence() {
        let s = sched("0 30 1 * * *", New_York);
        let expected = [
            "2026-10-31T05:30:00Z", // 01:30 EDT
            "2026-11-01T05:30:00Z", // 01:30 EDT, first pass; 01:30 EST (06:30Z) does not fire
            "2026-11-02T06:30:00Z", // 01:30 EST
        ];
        assert_eq!(strs(&s.upcoming(utc("2026-10-31T00:00:00Z"), 3)), expected);
        assert_eq!(
            strs(&croner_chain("0 30 1 * * *", New_York, "2026-10-31T00:00:00Z", 3)),
            expected
        );
        // From inside the second pass, the next fire is tomorrow — croner answers 05:30Z here,
        // an instant *before* its input, which we do not.
        let second_pass = utc("2026-11-01T06:10:00Z");
        assert_eq!(s.next_after(second_pass), Some(utc("2026-11-02T06:30:00Z")));
        let croner_answer = croner_chain("0 30 1 * * *", New_York, "2026-11-01T06:10:00Z", 1);
        assert_eq!(croner_answer, [utc("2026-11-01T05:30:00Z")]);
        // Backwards: the 01:30 EST second pass is not a slot.
        for at in [
            "2026-11-01T05:30:00Z",
            "2026-11-01T06:29:59Z",
            "2026-11-01T06:30:00Z",
            "2026-11-01T06:40:00Z",
            "2026-11-02T06:29:59Z",
        ] {
            assert_eq!(
                s.latest_at_or_before(utc(at)),
                Some(utc("2026-11-01T05:30:00Z")),
                "at {at}"
            );
        }
        assert_eq!(
            s.latest_at_or_before(utc("2026-11-01T05:29:59Z")),
            Some(utc("2026-10-31T05:30:00Z"))
        );
        // Exactly one slot on the local date 2026-11-01.
        let day = s.slots_between(utc("2026-11-01T04:00:00Z"), utc("2026-11-02T04:59:59Z"), 100);
        assert_eq!(strs(&day), ["2026-11-01T05:30:00Z"]);
    }

    #[test]
    fn wall_clock_lists_fire_once_per_listed_time() {
        // croner calls this an interval job and would fire 01:30 twice on fall-back day.
        let s = sched("0 30 1,13 * * *", New_York);
        assert_eq!(
            strs(&s.slots_between(utc("2026-11-01T04:00:00Z"), utc("2026-11-02T04:00:00Z"), 100)),
            ["2026-11-01T05:30:00Z", "2026-11-01T18:30:00Z"]
        );
        // Two listed times in the gap collapse into one fire at its end.
        let s = sched("0 0,30 2 * * *", New_York);
        assert_eq!(
            strs(&s.slots_between(utc("2026-03-08T05:00:00Z"), utc("2026-03-09T05:00:00Z"), 100)),
            ["2026-03-08T07:00:00Z"]
        );
    }

    #[test]
    fn interval_expressions_follow_elapsed_time_through_both_changes() {
        let s = sched("*/1 * * * * *", New_York);
        for (from, to) in [
            ("2026-11-01T04:00:00Z", "2026-11-01T08:00:00Z"),
            ("2026-03-08T05:00:00Z", "2026-03-08T09:00:00Z"),
        ] {
            let (from, to) = (utc(from), utc(to));
            let slots = s.slots_between(from, to, 100_000);
            assert_eq!(slots.len() as i64, (to - from).num_seconds());
            for w in slots.windows(2) {
                assert_eq!(w[1] - w[0], TimeDelta::seconds(1));
            }
        }
        // Where croner jumps from 01:59:59 EDT to 02:00:00 EST, skipping the second pass.
        assert_eq!(
            s.next_after(utc("2026-11-01T05:59:59Z")),
            Some(utc("2026-11-01T06:00:00Z"))
        );
        assert_eq!(
            croner_chain("*/1 * * * * *", New_York, "2026-11-01T05:59:59Z", 1),
            [utc("2026-11-01T07:00:00Z")]
        );

        let s = sched("0 */20 1 * * *", New_York);
        assert_eq!(
            strs(&s.slots_between(utc("2026-11-01T04:00:00Z"), utc("2026-11-01T08:00:00Z"), 100)),
            [
                "2026-11-01T05:00:00Z",
                "2026-11-01T05:20:00Z",
                "2026-11-01T05:40:00Z",
                "2026-11-01T06:00:00Z",
                "2026-11-01T06:20:00Z",
                "2026-11-01T06:40:00Z",
            ]
        );
        // The 02:xx local times do not exist on spring-forward day: skipped.
        let s = sched("0 */20 2 * * *", New_York);
        assert_eq!(
            strs(&s.slots_between(utc("2026-03-07T12:00:00Z"), utc("2026-03-09T12:00:00Z"), 100)),
            ["2026-03-09T06:00:00Z", "2026-03-09T06:20:00Z", "2026-03-09T06:40:00Z",]
        );
    }

    // --- boundaries ------------------------------------------------------------------------

    #[test]
    fn next_after_is_strict_and_ignores_sub_seconds() {
        let s = sched("0 0 2 * * *", Shanghai);
        let slot = utc("2026-05-01T18:00:00Z");
        assert_eq!(s.next_after(slot), Some(utc("2026-05-02T18:00:00Z")));
        assert_eq!(s.next_after(slot - TimeDelta::nanoseconds(1)), Some(slot));
        assert_eq!(
            s.next_after(slot + TimeDelta::milliseconds(500)),
            Some(utc("2026-05-02T18:00:00Z"))
        );
        let every = sched("*/1 * * * * *", Shanghai);
        assert_eq!(
            every.next_after(utc("2026-01-01T00:00:00.5Z")),
            Some(utc("2026-01-01T00:00:01Z"))
        );
    }

    #[test]
    fn latest_at_or_before_boundaries() {
        let s = sched("0 0 2 * * *", Shanghai);
        let slot = utc("2026-05-01T18:00:00Z");
        assert_eq!(s.latest_at_or_before(slot), Some(slot));
        assert_eq!(s.latest_at_or_before(slot + TimeDelta::milliseconds(999)), Some(slot));
        assert_eq!(
            s.latest_at_or_before(slot - TimeDelta::seconds(1)),
            Some(utc("2026-04-30T18:00:00Z"))
        );
        assert_eq!(
            s.latest_at_or_before(slot - TimeDelta::nanoseconds(1)),
            Some(utc("2026-04-30T18:00:00Z"))
        );
        assert_eq!(s.latest_at_or_before(utc("2026-05-02T17:59:59Z")), Some(slot));
        // Sparse schedules are still found quickly, and "never before" is None.
        let leap = sched("0 0 12 29 2 *", chrono_tz::UTC);
        assert_eq!(
            leap.latest_at_or_before(utc("2027-06-01T00:00:00Z")),
            Some(utc("2024-02-29T12:00:00Z"))
        );
        let future = sched("0 0 0 1 1 * 2030", Shanghai);
        assert_eq!(future.latest_at_or_before(utc("2026-01-01T00:00:00Z")), None);
        let past = sched("0 0 0 1 1 * 2020", Shanghai);
        assert_eq!(past.next_after(utc("2026-01-01T00:00:00Z")), None);
        assert!(past.upcoming(utc("2026-01-01T00:00:00Z"), 3).is_empty());
    }

    #[test]
    fn slots_between_boundaries() {
        let s = sched("0 0 2 * * *", Shanghai);
        let a = utc("2026-05-01T18:00:00Z");
        let b = utc("2026-05-02T18:00:00Z");
        let c = utc("2026-05-03T18:00:00Z");
        // Exclusive start, inclusive end.
        assert!(s.slots_between(a, a, 10).is_empty());
        assert_eq!(s.slots_between(a - TimeDelta::seconds(1), a, 10), [a]);
        assert_eq!(s.slots_between(a, b, 10), [b]);
        assert_eq!(s.slots_between(a, c, 10), [b, c]);
        assert_eq!(s.slots_between(a - TimeDelta::seconds(1), c, 10), [a, b, c]);
        assert_eq!(s.slots_between(a, c - TimeDelta::seconds(1), 10), [b]);
        // Limit keeps the oldest.
        assert_eq!(s.slots_between(a - TimeDelta::seconds(1), c, 2), [a, b]);
        assert!(s.slots_between(a, c, 0).is_empty());
        // Empty and reversed ranges.
        assert!(s.slots_between(c, a, 10).is_empty());
    }

    #[test]
    fn new_york_daily_fires_once_per_local_date_all_year() {
        for expr in ["0 30 1 * * *", "0 30 2 * * *", "0 0 2 * * *", "0 0 0 * * *"] {
            let s = sched(expr, New_York);
            let slots = s.upcoming(utc("2026-01-01T12:00:00Z"), 730);
            for w in slots.windows(2) {
                assert_eq!(
                    local(w[1], New_York).date(),
                    local(w[0], New_York).date().succ_opt().unwrap(),
                    "{expr}: {} then {}",
                    w[0],
                    w[1]
                );
            }
        }
    }

    #[test]
    fn forward_and_backward_searches_agree_over_a_year() {
        for expr in ["0 30 1 * * *", "0 30 2 * * *", "0 0,30 1,2 * * *", "0 */20 1,2 * * *"] {
            let s = sched(expr, New_York);
            let mut t = utc("2026-01-01T00:00:00Z");
            while t < utc("2027-01-01T00:00:00Z") {
                let next = s.next_after(t).unwrap();
                let latest = s.latest_at_or_before(t).unwrap();
                assert!(latest <= t && t < next, "{expr} at {t}");
                assert_eq!(s.next_after(latest), Some(next), "{expr} at {t}");
                assert_eq!(s.latest_at_or_before(next), Some(next), "{expr} at {t}");
                assert_eq!(
                    s.latest_at_or_before(next - TimeDelta::seconds(1)),
                    Some(latest),
                    "{expr} at {t}"
                );
                t += TimeDelta::minutes(7 * 60 + 13);
            }
        }
    }

    // --- a brute-force oracle --------------------------------------------------------------

    /// Slots in `(from, to]` by looking at every second, straight from the rules in the
    /// module docs.
    fn brute_force(s: &CronSchedule, from: DateTime<Utc>, to: DateTime<Utc>) -> Vec<DateTime<Utc>> {
        let naive_match = |n: NaiveDateTime| s.cron.is_time_matching(&n.and_utc()).unwrap();
        let mut out = Vec::new();
        let mut t = from + TimeDelta::seconds(1);
        while t <= to {
            let before = t - TimeDelta::seconds(1);
            let off_before = before.with_timezone(&s.tz).offset().fix().local_minus_utc();
            let off_now = t.with_timezone(&s.tz).offset().fix().local_minus_utc();
            let l = local(t, s.tz);
            let matches = naive_match(l);
            let repeat = match s.tz.from_local_datetime(&l) {
                LocalResult::Ambiguous(first, _) => first.with_timezone(&Utc) != t,
                _ => false,
            };
            let mut fire = matches && !(s.wall_clock && repeat);
            if s.wall_clock && off_now > off_before {
                let mut n = local(before, s.tz) + TimeDelta::seconds(1);
                while n < l {
                    fire |= naive_match(n);
                    n += TimeDelta::seconds(1);
                }
            }
            if fire {
                out.push(t);
            }
            t += TimeDelta::seconds(1);
        }
        out
    }

    #[test]
    fn agrees_with_brute_force_around_transitions() {
        // Six-hour windows around each 2026 offset change (and a quiet one for Shanghai).
        let cases: [(Tz, &str, &str); 7] = [
            (New_York, "2026-03-08T04:00:00Z", "2026-03-08T10:00:00Z"),
            (New_York, "2026-11-01T03:00:00Z", "2026-11-01T09:00:00Z"),
            (London, "2026-03-28T22:00:00Z", "2026-03-29T04:00:00Z"),
            (London, "2026-10-24T22:00:00Z", "2026-10-25T04:00:00Z"),
            // Lord Howe Island moves its clocks by 30 minutes.
            (Lord_Howe, "2026-04-04T12:00:00Z", "2026-04-04T18:00:00Z"),
            (Lord_Howe, "2026-10-03T12:00:00Z", "2026-10-03T18:00:00Z"),
            (Shanghai, "2026-03-08T04:00:00Z", "2026-03-08T10:00:00Z"),
        ];
        let exprs = [
            "0 30 1 * * *",
            "0 30 2 * * *",
            "0 0 2 * * *",
            "0 15,45 1,2 * * *",
            "0 */20 1,2 * * *",
            "0 0 * * * *",
            "30 */7 * * * *",
        ];
        for (tz, from, to) in cases {
            let (from, to) = (utc(from), utc(to));
            for expr in exprs {
                let s = sched(expr, tz);
                let expected = brute_force(&s, from, to);
                assert_eq!(
                    s.slots_between(from, to, 100_000),
                    expected,
                    "{expr} in {tz} over ({from}, {to}]"
                );
                // Backwards agrees with forwards at every slot and just before it.
                for slot in &expected {
                    assert_eq!(s.latest_at_or_before(*slot), Some(*slot), "{expr} {tz}");
                    let prev = s.latest_at_or_before(*slot - TimeDelta::seconds(1));
                    assert!(prev < Some(*slot), "{expr} {tz}");
                    assert_eq!(s.next_after(prev.unwrap()), Some(*slot), "{expr} {tz}");
                }
            }
        }
    }
}

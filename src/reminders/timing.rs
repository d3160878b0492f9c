//! When a loan's reminders are due: pure rules, no I/O, no clock (the caller passes `now`).

use chrono::{DateTime, NaiveDate, NaiveTime, TimeDelta, TimeZone, Utc};
use chrono_tz::Tz;

use super::{Reminder, ReminderKind};
use crate::domain::{LoanId, business_date};

/// Reminders go out at 09:00 business time: early enough to act on the same day, late enough
/// not to wake anyone.
pub const REMINDER_TIME: NaiveTime = NaiveTime::from_hms_opt(9, 0, 0).expect("09:00 is a time");

/// A reminder and the instant it should be delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timed {
    pub reminder: Reminder,
    pub at: DateTime<Utc>,
}

impl Timed {
    /// The sorted-set score: milliseconds since the Unix epoch.
    pub fn score(&self) -> i64 {
        self.at.timestamp_millis()
    }
}

/// The moment `kind` is due for a loan due on `due_on`: 09:00 in `tz` on the day before
/// (`DUE_TOMORROW`) or after (`OVERDUE`). `None` only at the ends of the calendar.
pub fn moment(kind: ReminderKind, due_on: NaiveDate, tz: Tz) -> Option<DateTime<Utc>> {
    let day = match kind {
        ReminderKind::DueTomorrow => due_on.pred_opt()?,
        ReminderKind::Overdue => due_on.succ_opt()?,
    };
    Some(local_instant(day, REMINDER_TIME, tz))
}

/// What to queue for an open loan due on `due_on`, seen at `now`.
///
/// A moment already past is delivered at once (its score is `now`, so the queue's oldest due
/// item keeps meaning "how late are we", not "how old was this loan"), except `DUE_TOMORROW`
/// for a loan that is already due on today's business date: that reminder is skipped. A
/// returned loan gets none: callers only time open loans.
pub fn for_loan(loan_id: LoanId, due_on: NaiveDate, now: DateTime<Utc>, tz: Tz) -> Vec<Timed> {
    ReminderKind::ALL
        .into_iter()
        .filter(|&kind| !is_stale(kind, due_on, now, tz))
        .filter_map(|kind| {
            let at = moment(kind, due_on, tz)?.max(now);
            Some(Timed {
                reminder: Reminder::new(loan_id, kind),
                at,
            })
        })
        .collect()
}

/// Whether delivering `kind` at `now` would make no sense any more: "due tomorrow" once the
/// loan is due. The consumer asks the same question at delivery, so a reminder that waited too
/// long (workers down, Redis away) is dropped rather than sent late.
pub fn is_stale(kind: ReminderKind, due_on: NaiveDate, now: DateTime<Utc>, tz: Tz) -> bool {
    kind == ReminderKind::DueTomorrow && business_date(now, tz) >= due_on
}

/// `time` on `day` in `tz` as an instant. An ambiguous local time (clocks going back) is the
/// earlier instant; a local time that does not exist (clocks going forward) becomes the first
/// one after the gap, so every day has exactly one reminder instant.
fn local_instant(day: NaiveDate, time: NaiveTime, tz: Tz) -> DateTime<Utc> {
    let local = day.and_time(time);
    // Gaps are at most a few hours long: look forward in quarter hours.
    (0..=4 * 24)
        .find_map(|quarter| {
            tz.from_local_datetime(&(local + TimeDelta::minutes(15 * quarter)))
                .earliest()
        })
        .map(|at| at.with_timezone(&Utc))
        // No zone skips a whole day at 09:00; if one ever did, read the time as UTC.
        .unwrap_or_else(|| local.and_utc())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono_tz::{America, Asia};

    fn date(text: &str) -> NaiveDate {
        text.parse().unwrap()
    }

    fn utc(text: &str) -> DateTime<Utc> {
        text.parse().unwrap()
    }

    fn kinds_and_times(timed: &[Timed]) -> Vec<(ReminderKind, DateTime<Utc>)> {
        timed.iter().map(|p| (p.reminder.kind, p.at)).collect()
    }

    #[test]
    fn moments_are_nine_in_the_morning_around_the_due_date() {
        use ReminderKind::{DueTomorrow, Overdue};
        for (kind, due, tz, at) in [
            // Shanghai is UTC+8 all year.
            (DueTomorrow, "2026-03-10", Asia::Shanghai, "2026-03-09T01:00:00Z"),
            (Overdue, "2026-03-10", Asia::Shanghai, "2026-03-11T01:00:00Z"),
            // New York moves to UTC-4 on 2026-03-08: before and after the switch.
            (DueTomorrow, "2026-03-08", America::New_York, "2026-03-07T14:00:00Z"),
            (Overdue, "2026-03-08", America::New_York, "2026-03-09T13:00:00Z"),
        ] {
            assert_eq!(moment(kind, date(due), tz), Some(utc(at)), "{kind} due {due} in {tz}");
        }
        assert_eq!(moment(ReminderKind::DueTomorrow, NaiveDate::MIN, Asia::Shanghai), None);
    }

    #[test]
    fn a_fresh_loan_gets_both_reminders_at_their_moments() {
        let now = utc("2026-03-01T02:00:00Z");
        let timed = for_loan(LoanId(42), date("2026-03-10"), now, Asia::Shanghai);
        assert_eq!(
            kinds_and_times(&timed),
            [
                (ReminderKind::DueTomorrow, utc("2026-03-09T01:00:00Z")),
                (ReminderKind::Overdue, utc("2026-03-11T01:00:00Z")),
            ]
        );
        assert!(timed.iter().all(|p| p.reminder.loan_id == LoanId(42)));
        assert_eq!(timed[0].score(), utc("2026-03-09T01:00:00Z").timestamp_millis());
    }

    #[test]
    fn a_passed_moment_is_delivered_at_once() {
        // 15:00 in Shanghai on the day before the due date: 09:00 has passed, the loan is not due.
        let now = utc("2026-03-09T07:00:00Z");
        assert_eq!(
            kinds_and_times(&for_loan(LoanId(1), date("2026-03-10"), now, Asia::Shanghai)),
            [
                (ReminderKind::DueTomorrow, now),
                (ReminderKind::Overdue, utc("2026-03-11T01:00:00Z")),
            ]
        );
        // A loan imported long after its due date: overdue at once, "due tomorrow" skipped.
        let now = utc("2026-05-01T00:00:00Z");
        assert_eq!(
            kinds_and_times(&for_loan(LoanId(1), date("2026-03-10"), now, Asia::Shanghai)),
            [(ReminderKind::Overdue, now)]
        );
    }

    #[test]
    fn due_tomorrow_is_skipped_from_the_due_date_on() {
        let due = date("2026-03-10");
        // 00:30 on the due date in Shanghai is still the 9th in UTC: the business date decides.
        let now = utc("2026-03-09T16:30:00Z");
        assert!(is_stale(ReminderKind::DueTomorrow, due, now, Asia::Shanghai));
        assert_eq!(
            kinds_and_times(&for_loan(LoanId(1), due, now, Asia::Shanghai)),
            [(ReminderKind::Overdue, utc("2026-03-11T01:00:00Z"))]
        );
        // One minute earlier it is the 9th in Shanghai: still worth sending, at once.
        let now = utc("2026-03-09T15:59:00Z");
        assert!(!is_stale(ReminderKind::DueTomorrow, due, now, Asia::Shanghai));
        assert!(!is_stale(
            ReminderKind::Overdue,
            due,
            utc("2030-01-01T00:00:00Z"),
            Asia::Shanghai
        ));
    }

    #[test]
    fn a_loan_due_on_the_day_it_is_made_gets_only_the_overdue_reminder() {
        let now = utc("2026-03-10T02:00:00Z");
        assert_eq!(
            kinds_and_times(&for_loan(LoanId(1), date("2026-03-10"), now, Asia::Shanghai)),
            [(ReminderKind::Overdue, utc("2026-03-11T01:00:00Z"))]
        );
    }
}

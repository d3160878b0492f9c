//! Every slot around each 2026 clock change, compared with a brute-force reading of the rules.

use chrono::{DateTime, LocalResult, NaiveDateTime, Offset, TimeDelta, TimeZone, Utc};
use chrono_tz::America::New_York;
use chrono_tz::Asia::Shanghai;
use chrono_tz::Australia::Lord_Howe;
use chrono_tz::Europe::London;
use chrono_tz::Tz;
use finesettle::schedule::CronSchedule;

use super::{croner, local, sched, utc};

/// Slots in `(from, to]` by looking at every second, straight from the rules in the
/// module docs.
fn brute_force(s: &CronSchedule, from: DateTime<Utc>, to: DateTime<Utc>) -> Vec<DateTime<Utc>> {
    let cron = croner(s.expr());
    let naive_match = |n: NaiveDateTime| cron.is_time_matching(&n.and_utc()).unwrap();
    let mut out = Vec::new();
    let mut t = from + TimeDelta::seconds(1);
    while t <= to {
        let before = t - TimeDelta::seconds(1);
        let off_before = before.with_timezone(&s.tz()).offset().fix().local_minus_utc();
        let off_now = t.with_timezone(&s.tz()).offset().fix().local_minus_utc();
        let l = local(t, s.tz());
        let matches = naive_match(l);
        let repeat = match s.tz().from_local_datetime(&l) {
            LocalResult::Ambiguous(first, _) => first.with_timezone(&Utc) != t,
            _ => false,
        };
        let mut fire = matches && !(s.is_wall_clock() && repeat);
        if s.is_wall_clock() && off_now > off_before {
            let mut n = local(before, s.tz()) + TimeDelta::seconds(1);
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

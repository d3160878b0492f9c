//! The fire loop against the real clock.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration as StdDuration;

use chrono::{DateTime, TimeDelta, Utc};
use chrono_tz::Asia::Shanghai;
use finesettle::clock::Clock;
use finesettle::schedule::{CronSchedule, ScheduleError, Ticker};
use tokio_util::sync::CancellationToken;

use super::{sched, utc};

fn every_second() -> CronSchedule {
    sched("*/1 * * * * *", Shanghai)
}

type Fires = Arc<Mutex<Vec<(DateTime<Utc>, DateTime<Utc>)>>>;

/// Starts a ticker that records `(slot, wall clock at the call)`.
async fn recording_ticker(stop: CancellationToken) -> (Ticker, Fires) {
    let fires: Fires = Arc::default();
    let sink = fires.clone();
    let ticker = Ticker::start(every_second(), Clock::system(), stop, move |slot| {
        sink.lock().unwrap().push((slot, Utc::now()));
        async {}
    })
    .await
    .unwrap();
    (ticker, fires)
}

#[test]
fn on_time_fires_the_armed_slot() {
    let s = every_second();
    let armed = utc("2026-05-01T00:00:10Z");
    assert_eq!(s.catch_up(armed, armed), (armed, 0));
    assert_eq!(s.catch_up(armed, armed + TimeDelta::milliseconds(999)), (armed, 0));
    // Woken early (should not happen after the wait): still the armed slot.
    assert_eq!(s.catch_up(armed, armed - TimeDelta::seconds(5)), (armed, 0));
}

#[test]
fn late_wake_fires_only_the_latest_slot() {
    let s = every_second();
    let armed = utc("2026-05-01T00:00:10Z");
    // Suspended for 30.5 s: slots :10 … :39 skipped, :40 fired.
    let (fire, skipped) = s.catch_up(armed, utc("2026-05-01T00:00:40.5Z"));
    assert_eq!(fire, utc("2026-05-01T00:00:40Z"));
    assert_eq!(skipped, 30);

    let daily = CronSchedule::parse("0 0 2 * * *", Shanghai).unwrap();
    let armed = utc("2026-05-01T18:00:00Z");
    // Three nights asleep: the fire settles from the latest slot; two are skipped.
    let (fire, skipped) = daily.catch_up(armed, utc("2026-05-03T19:00:00Z"));
    assert_eq!(fire, utc("2026-05-03T18:00:00Z"));
    assert_eq!(skipped, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fires_about_once_a_second_and_stops_when_cancelled() {
    let stop = CancellationToken::new();
    let started = Utc::now();
    let (ticker, fires) = recording_ticker(stop.clone()).await;
    tokio::time::sleep(StdDuration::from_millis(4_300)).await;
    stop.cancel();
    let seen = fires.lock().unwrap().clone();
    assert!(
        (3..=5).contains(&seen.len()),
        "expected about 4 fires in 4.3 s, got {seen:?}"
    );
    for (slot, called_at) in &seen {
        assert!(*slot > started, "slot {slot} is not after start {started}");
        assert_eq!(slot.timestamp_subsec_nanos(), 0);
        assert!(called_at >= slot, "fired early: {called_at} < {slot}");
        assert!(
            *called_at - *slot < TimeDelta::milliseconds(1_500),
            "fired late: {called_at} vs {slot}"
        );
    }
    for w in seen.windows(2) {
        assert!(w[1].0 > w[0].0, "slots not increasing: {seen:?}");
        assert!(w[1].0 - w[0].0 <= TimeDelta::seconds(2), "gap in slots: {seen:?}");
    }
    // Nothing fires after cancellation.
    tokio::time::sleep(StdDuration::from_millis(2_200)).await;
    assert_eq!(fires.lock().unwrap().len(), seen.len());
    ticker.shutdown().await;
    assert_eq!(fires.lock().unwrap().len(), seen.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_stops_firing_without_cancelling_the_callers_token() {
    let stop = CancellationToken::new();
    let (ticker, fires) = recording_ticker(stop.clone()).await;
    tokio::time::sleep(StdDuration::from_millis(1_600)).await;
    ticker.shutdown().await;
    let count = fires.lock().unwrap().len();
    assert!(count >= 1, "no fire before shutdown");
    assert!(!stop.is_cancelled());
    tokio::time::sleep(StdDuration::from_millis(2_200)).await;
    assert_eq!(fires.lock().unwrap().len(), count);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_calls_do_not_delay_the_next_fire() {
    let stop = CancellationToken::new();
    let calls = Arc::new(AtomicUsize::new(0));
    let running = Arc::new(AtomicUsize::new(0));
    let max_running = Arc::new(AtomicUsize::new(0));
    let (c, r, m, s) = (calls.clone(), running.clone(), max_running.clone(), stop.clone());
    let ticker = Ticker::start(every_second(), Clock::system(), stop.clone(), move |_slot| {
        c.fetch_add(1, Ordering::SeqCst);
        let now_running = r.fetch_add(1, Ordering::SeqCst) + 1;
        m.fetch_max(now_running, Ordering::SeqCst);
        let (r, s) = (r.clone(), s.clone());
        async move {
            // A "settlement" that takes far longer than the interval.
            tokio::select! {
                () = s.cancelled() => {}
                () = tokio::time::sleep(StdDuration::from_secs(30)) => {}
            }
            r.fetch_sub(1, Ordering::SeqCst);
        }
    })
    .await
    .unwrap();
    tokio::time::sleep(StdDuration::from_millis(3_300)).await;
    assert!(calls.load(Ordering::SeqCst) >= 2);
    assert!(max_running.load(Ordering::SeqCst) >= 2);
    stop.cancel();
    // Shutdown waits for the in-flight calls, which end on cancellation.
    tokio::time::timeout(StdDuration::from_secs(5), ticker.shutdown())
        .await
        .expect("shutdown waits only for calls that are winding down");
    assert_eq!(running.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_schedule_without_future_slots_is_an_error() {
    let past = CronSchedule::parse("0 0 0 1 1 * 2020", Shanghai).unwrap();
    let err = Ticker::start(past, Clock::system(), CancellationToken::new(), |_| async {})
        .await
        .err()
        .expect("no ticker without an upcoming slot");
    assert!(matches!(err, ScheduleError::NoUpcomingSlot { .. }), "{err:?}");
}

//! The dashboard in headless Chromium (Debian's `chromium` package), against a running service
//! with two replicas' worth of history: what a person would see, and a screenshot of it in
//! `target/dashboard.png`.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use tokio::process::Command;

use crate::common::{TestApp, spawn_app_with, spawn_replica};
use crate::dashboard::support::{assert_fine_totals_shown, seed_small, settle};

const WINDOW: (u32, u32) = (1280, 1400);

/// The Chromium binary: `$CHROMIUM` when set, else the usual install places (Debian, Ubuntu,
/// Chrome on Linux and macOS). Missing is a failure, not a skip: CI installs it (`.ci/run`).
fn chromium() -> PathBuf {
    if let Some(path) = std::env::var_os("CHROMIUM") {
        return PathBuf::from(path);
    }
    let candidates = [
        "/usr/bin/chromium",
        "/usr/bin/chromium-browser",
        "/usr/bin/google-chrome",
        "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
    ];
    let found = candidates.iter().map(PathBuf::from).find(|p| p.exists());
    found.unwrap_or_else(|| {
        panic!(
            "Chromium is not installed (looked for {candidates:?}); the dashboard test needs it: \
             apt-get install -y chromium, or CHROMIUM=/path/to/chrome"
        )
    })
}

/// Runs headless Chromium on `url` with `mode` (`--dump-dom` or `--screenshot=<file>`), with a
/// profile of its own and no network access beyond the page.
async fn run_chromium(url: &str, mode: &str) -> Output {
    let profile = std::env::temp_dir().join(format!("finesettle-chromium-{}", uuid::Uuid::new_v4().simple()));
    let mut command = Command::new(chromium());
    command
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--window-size={},{}", WINDOW.0, WINDOW.1))
        .arg(mode)
        .arg(url)
        .kill_on_drop(true);
    let output = tokio::time::timeout(Duration::from_secs(90), command.output())
        .await
        .expect("chromium finishes within 90 s")
        .expect("chromium starts");
    let _ = std::fs::remove_dir_all(&profile);
    assert!(
        output.status.success(),
        "chromium {mode} failed: {}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// `target/dashboard.png`, next to the build's other outputs.
fn screenshot_path() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the target directory")
        .join("dashboard.png")
}

/// Two replicas on one database: `replica-a` settles three dates, then `replica-b` two more.
async fn two_replicas_with_history() -> (TestApp, TestApp) {
    let free_at_once = |s: &mut finesettle::config::Settings| s.job.lock_at_least_for = Duration::ZERO;
    let a = spawn_app_with(|s| {
        free_at_once(s);
        s.instance_id = "replica-a".to_owned();
    })
    .await;
    let b = spawn_replica(&a, |s| {
        free_at_once(s);
        s.instance_id = "replica-b".to_owned();
    })
    .await;
    seed_small(&a).await;
    let yesterday = a.today().await.pred_opt().unwrap();
    settle(&a, yesterday - chrono::Days::new(4), yesterday - chrono::Days::new(2)).await;
    settle(&b, yesterday - chrono::Days::new(1), yesterday).await;
    (a, b)
}

#[tokio::test]
async fn a_person_sees_the_job_the_timeline_per_replica_and_the_fine_totals() {
    let chromium = chromium();
    let (a, _b) = two_replicas_with_history().await;
    let url = format!("{}/", a.address);

    let dom = String::from_utf8(run_chromium(&url, "--dump-dom").await.stdout).expect("a UTF-8 DOM");
    assert!(dom.contains("operator dashboard"), "not the dashboard: {dom:.500}");
    assert!(dom.contains("settle-fines"));
    // One lane per replica, one green bar per execution (five dates settled).
    assert!(
        dom.contains(">replica-a</text>") && dom.contains(">replica-b</text>"),
        "lanes missing"
    );
    assert_eq!(
        dom.matches(r#"class="bar s-success""#).count(),
        5,
        "one bar per execution"
    );
    // The attempts say who won each fire.
    assert_eq!(dom.matches(r#"<span class="badge s-won">WON</span>"#).count(), 2);
    // The totals as the database has them.
    assert_fine_totals_shown(&a, &dom).await;

    let path = screenshot_path();
    let _ = std::fs::remove_file(&path);
    run_chromium(&url, &format!("--screenshot={}", path.display())).await;
    let png = std::fs::read(&path).unwrap_or_else(|e| panic!("{} was not written: {e}", path.display()));
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "a PNG");
    let width = u32::from_be_bytes(png[16..20].try_into().unwrap());
    let height = u32::from_be_bytes(png[20..24].try_into().unwrap());
    assert_eq!((width, height), WINDOW, "the screenshot has the window's size");
    assert!(
        png.len() > 20_000,
        "a {}-byte screenshot is too small to show the page",
        png.len()
    );
    eprintln!(
        "dashboard screenshot: {} (chromium: {})",
        path.display(),
        chromium.display()
    );
}

//! Containers started by the tests, and their removal when the test run ends.
//!
//! Where no local PostgreSQL or Redis answers, the harness starts one with testcontainers. nextest
//! runs every test in a process of its own, and a container kept in a process's statics outlives
//! it (statics are never dropped): one container per test, hundreds per run, all left running. So
//! the servers are **shared by the run** instead:
//!
//! - every container carries the label `finesettle.test-run=<run>`, where the run is nextest's
//!   `NEXTEST_RUN_ID` (or, under `cargo test`, the test binary's process);
//! - the first process of a run starts the server with testcontainers' reuse, under a file lock;
//!   the others find it by its labels (reuse also keeps `Drop` from removing it);
//! - that first process also spawns a **reaper**: a detached shell that waits for the run to end
//!   (nextest's own process, or the test binary) and then removes every container and network
//!   with the run's label. An interrupted run (Ctrl-C, a crash, a timeout) ends the same way, so
//!   nothing is left behind; the reaper sits in a process group of its own, out of Ctrl-C's reach.
//!
//! Containers a single test starts (the duplicate-run tests' replicas) carry the label too
//! ([`label`]): testcontainers removes them when the test drops them, the reaper when it cannot.

use std::fs::{File, OpenOptions};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use testcontainers::core::ContainerRequest;
use testcontainers::runners::AsyncRunner;
use testcontainers::{ContainerAsync, Image, ImageExt, ReuseDirective};

/// The label every container and network of a test run carries.
pub const RUN_LABEL: &str = "finesettle.test-run";

/// The test run this process belongs to.
struct Run {
    /// The value of [`RUN_LABEL`].
    key: String,
    /// The process whose end is the end of the run.
    watched_pid: u32,
}

fn run() -> &'static Run {
    static RUN: OnceLock<Run> = OnceLock::new();
    RUN.get_or_init(|| match std::env::var("NEXTEST_RUN_ID") {
        // nextest starts each test process itself: its parent is the run.
        Ok(id) => Run {
            key: format!("nextest-{id}"),
            watched_pid: std::os::unix::process::parent_id(),
        },
        Err(_) => Run {
            key: format!("process-{}", std::process::id()),
            watched_pid: std::process::id(),
        },
    })
}

/// The `label=value` filter of this run, for `docker ps --filter` and friends.
pub fn run_filter() -> String {
    format!("label={RUN_LABEL}={}", run().key)
}

/// A file of this run in the system's temporary directory (locks and markers).
fn run_file(suffix: &str) -> PathBuf {
    std::env::temp_dir().join(format!("finesettle-tests-{}.{suffix}", run().key))
}

/// `request` labelled as this run's, with the reaper started: the container is removed when the
/// run ends, even if the test that started it cannot drop it.
pub fn label<I: Image>(request: ContainerRequest<I>) -> ContainerRequest<I> {
    ensure_reaper();
    request.with_label(RUN_LABEL, run().key.clone())
}

/// The run's one container of `kind` (say `postgres`), started by the first process that asks and
/// found by the others. Keep the handle: it stays valid for the whole run.
pub async fn shared<I: Image>(request: ContainerRequest<I>, kind: &str) -> ContainerAsync<I> {
    let lock_path = run_file(&format!("{kind}.lock"));
    // One process starts it while the others wait here; they then find it by its labels.
    let lock = tokio::task::spawn_blocking(move || -> std::io::Result<File> {
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(lock_path)?;
        file.lock()?;
        Ok(file)
    })
    .await
    .expect("the lock task ends")
    .expect("lock the shared container's file");
    let container = label(request)
        .with_label("finesettle.test-kind", kind)
        .with_reuse(ReuseDirective::Always)
        .start()
        .await
        .unwrap_or_else(|e| panic!("start the shared {kind} container with testcontainers (is Docker running?): {e}"));
    drop(lock);
    container
}

/// The reaper: in the background (the shell that starts it exits at once, so nothing is left to
/// wait for), wait for the run's process, then remove what carries the run's label.
const REAPER: &str = r#"
(
    while kill -0 "$1" 2> /dev/null; do sleep 1; done
    docker ps -aq --filter "$2" | xargs -r docker rm -f -v
    docker network ls -q --filter "$2" | xargs -r docker network rm
    rm -f "$3".*
) > /dev/null 2>&1 < /dev/null &
"#;

/// Starts the run's reaper, once per run (the first process to create its marker file).
fn ensure_reaper() {
    static STARTED: OnceLock<()> = OnceLock::new();
    STARTED.get_or_init(|| {
        let marker = run_file("reaper");
        let first = OpenOptions::new().write(true).create_new(true).open(&marker).is_ok();
        if !first {
            return;
        }
        let prefix = std::env::temp_dir().join(format!("finesettle-tests-{}", run().key));
        Command::new("sh")
            .args(["-c", REAPER, "finesettle-test-reaper"])
            .arg(run().watched_pid.to_string())
            .arg(run_filter())
            .arg(prefix)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            // Its own process group: a Ctrl-C to the run does not reach it.
            .process_group(0)
            .status()
            .expect("start the test containers' reaper");
    });
}

/// A Docker network of this run's, removed when dropped (and by the reaper if that cannot run).
pub struct Network {
    pub name: String,
}

impl Network {
    pub fn create(name: &str) -> Self {
        ensure_reaper();
        docker(&[
            "network",
            "create",
            "--label",
            &format!("{RUN_LABEL}={}", run().key),
            name,
        ]);
        Network { name: name.to_owned() }
    }
}

impl Drop for Network {
    fn drop(&mut self) {
        // Fails while a container is still attached; the reaper removes it at the end of the run.
        let _ = Command::new("docker")
            .args(["network", "rm", &self.name])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// Runs `docker <args>` and answers its standard output; panics with its error output when it
/// fails. For what testcontainers has no call for: `kill`, `network disconnect`, `inspect`.
pub fn docker(args: &[&str]) -> String {
    let output = Command::new("docker").args(args).output().expect("run the docker CLI");
    assert!(
        output.status.success(),
        "docker {} failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

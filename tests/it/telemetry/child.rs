//! Runs a test's body in a process of its own, with the environment the test chooses.
//!
//! Telemetry is process-wide: one subscriber, one set of providers, configured from the
//! environment once. A test cannot change its own environment (`set_var` is unsafe, and unsafe
//! code is forbidden here), and two tests in one process (`cargo test`) would share one
//! configuration. So each test runs twice: as the *parent*, which starts a collector, re-runs this
//! test binary filtered to the same test with `FINESETTLE_TEST_CHILD` and the chosen variables,
//! then checks what the collector received; and as the *child*, which sees the marker and runs
//! the body that initializes telemetry and emits. The same works under nextest and `cargo test`.

use std::process::Stdio;

use finesettle::telemetry::{self, Exporting, metrics};

const MARKER: &str = "FINESETTLE_TEST_CHILD";

/// Variables the child must not inherit from the developer's shell or CI: only what the test
/// sets may configure telemetry.
const CLEARED_PREFIXES: [&str; 2] = ["OTEL_", "FINESETTLE_"];
const CLEARED: [&str; 1] = ["RUST_LOG"];

/// True in the child process.
pub fn is_child() -> bool {
    std::env::var_os(MARKER).is_some()
}

/// What the child wrote.
pub struct ChildOutput {
    pub stdout: String,
    pub stderr: String,
}

/// Runs `test` (its full name in this binary, such as `telemetry::export::a_test`) in a child
/// process with `env`, and asserts that exactly that one test ran and passed.
pub async fn run(test: &str, env: &[(&str, &str)]) -> ChildOutput {
    let mut command = tokio::process::Command::new(std::env::current_exe().expect("the test binary"));
    command
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .stdin(Stdio::null())
        .kill_on_drop(true);
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if CLEARED_PREFIXES.iter().any(|p| name.starts_with(p)) || CLEARED.contains(&name.as_ref()) {
            command.env_remove(name.as_ref());
        }
    }
    command.env(MARKER, "1").envs(env.iter().copied());
    let output = command.output().await.expect("the child test process starts");
    let child = ChildOutput {
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    };
    assert!(
        output.status.success() && child.stdout.contains("test result: ok. 1 passed"),
        "the child run of {test} failed ({})\n--- stdout\n{}\n--- stderr\n{}",
        output.status,
        child.stdout,
        child.stderr
    );
    child
}

/// The child's body of the tests that check where one signal goes: initializes telemetry from
/// the environment, asserts it exports `expected`, emits one span with an event and one lock
/// attempt, and flushes.
pub async fn emit_one_fire(expected: Exporting) {
    telemetry::init();
    assert_eq!(telemetry::exporting(), expected);
    tracing::info_span!("job.fire").in_scope(|| tracing::info!("fired"));
    metrics::lock_attempt(&"settle-fines".into(), "WON");
    tokio::task::spawn_blocking(telemetry::shutdown).await.unwrap();
}

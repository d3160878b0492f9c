//! The real `finesettle` binary as a child process: started with the environment a test chooses,
//! its output collected, signalled with `kill`, and always killed when the test ends (a passing
//! test, a failed assertion, a panic).

use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::NaiveDate;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::process::{Child, Command};
use tokio::task::JoinHandle;

use crate::common::ADMIN_TOKEN;
use crate::common::checks::{Execution, executions, poll_until};

/// The binary cargo built for these tests.
const BIN: &str = env!("CARGO_BIN_EXE_finesettle");

/// Variables the child must not inherit from the developer's shell or CI: only what the test sets
/// configures it.
const CLEARED_PREFIXES: [&str; 2] = ["FINESETTLE_", "OTEL_"];
const CLEARED: [&str; 2] = ["RUST_LOG", "DATABASE_URL"];

/// A `finesettle` command line being put together.
pub struct Finesettle {
    command: Command,
    instance_id: String,
}

impl Finesettle {
    /// `finesettle` on `database_url` as replica `instance_id`: HTTP on a port of the system's
    /// choosing, the admin token of the harness, a small connection pool.
    pub fn new(database_url: &str, instance_id: &str) -> Self {
        Self::of(BIN.as_ref(), database_url, instance_id)
    }

    /// [`Finesettle::new`] run by Debian's `faketime` with its clock at `offset` (`+3h`, `-1d`):
    /// the real binary on a host whose clock is wrong. Only the wall clock is shifted; the
    /// monotonic clock, which tokio's timers follow, is left alone, as on a real host.
    pub fn under_faketime(database_url: &str, instance_id: &str, offset: &str) -> Self {
        let mut command = Command::new("faketime");
        command
            .args(["-f", offset, BIN])
            .env("FAKETIME_DONT_FAKE_MONOTONIC", "1")
            .env("DONT_FAKE_MONOTONIC", "1");
        Self::with_command(command, database_url, instance_id)
    }

    /// The same with another build of `finesettle`: the previous release, in the upgrade test.
    pub fn of(binary: &std::path::Path, database_url: &str, instance_id: &str) -> Self {
        Self::with_command(Command::new(binary), database_url, instance_id)
    }

    fn with_command(mut command: Command, database_url: &str, instance_id: &str) -> Self {
        for (name, _) in std::env::vars_os() {
            let name = name.to_string_lossy();
            if CLEARED_PREFIXES.iter().any(|p| name.starts_with(p)) || CLEARED.contains(&name.as_ref()) {
                command.env_remove(name.as_ref());
            }
        }
        command
            .env("DATABASE_URL", database_url)
            .env("FINESETTLE_INSTANCE_ID", instance_id)
            .env("FINESETTLE_HTTP_ADDR", "127.0.0.1:0")
            .env("FINESETTLE_API_TOKENS", format!("admin={ADMIN_TOKEN}"))
            .env("FINESETTLE_DB_MAX_CONNECTIONS", "4")
            .env("RUST_LOG", "info,sqlx=warn")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        Finesettle {
            command,
            instance_id: instance_id.to_owned(),
        }
    }

    /// A lease of three seconds (one at least) and batches of 100: a holder that crashes or stops
    /// blocks the job for seconds only, and each date takes many statements, so that a backfill
    /// of the busy range lasts several seconds (the crash and pause tests).
    pub fn with_a_short_lease(self) -> Self {
        self.env("FINESETTLE_LOCK_AT_MOST_FOR", "3s")
            .env("FINESETTLE_LOCK_AT_LEAST_FOR", "1s")
            .env("FINESETTLE_SETTLE_BATCH_SIZE", "100")
    }

    pub fn env(mut self, name: &str, value: impl AsRef<std::ffi::OsStr>) -> Self {
        self.command.env(name, value);
        self
    }

    /// Starts `finesettle <args>`.
    /// Spawns on a backfill from `from` to `to` and stops the process (SIGSTOP) in the middle of a
    /// date, after it settled one ([`stop_in_the_middle_of_a_date`]): the stopped replica and the
    /// execution of that date.
    pub async fn backfill_stopped_mid_date(
        self,
        pool: &sqlx::PgPool,
        from: NaiveDate,
        to: NaiveDate,
    ) -> (Replica, Execution) {
        let instance_id = self.instance_id.clone();
        let mut replica = self.spawn(&backfill(from, to));
        let execution = stop_in_the_middle_of_a_date(&mut replica, pool, &instance_id).await;
        (replica, execution)
    }

    pub fn spawn(mut self, args: &[impl AsRef<str>]) -> Replica {
        let args: Vec<&str> = args.iter().map(AsRef::as_ref).collect();
        self.command.args(&args);
        let mut child = self.command.spawn().expect("start the finesettle binary");
        let pid = child.id().expect("a running child has a pid");
        let stdout = Arc::new(Mutex::new(String::new()));
        let stderr = Arc::new(Mutex::new(String::new()));
        let readers = vec![
            collect(child.stdout.take().expect("piped stdout"), Arc::clone(&stdout)),
            collect(child.stderr.take().expect("piped stderr"), Arc::clone(&stderr)),
        ];
        Replica {
            name: format!("{} ({})", self.instance_id, args.join(" ")),
            child,
            pid,
            stdout,
            stderr,
            readers,
        }
    }

    /// Runs `finesettle <args>` to its end, for at most `within`.
    pub async fn run(self, args: &[impl AsRef<str>], within: Duration) -> Finished {
        self.spawn(args).wait(within).await
    }
}

/// `backfill --from <from> --to <to>`.
pub fn backfill(from: NaiveDate, to: NaiveDate) -> [String; 5] {
    [
        "backfill".into(),
        "--from".into(),
        from.to_string(),
        "--to".into(),
        to.to_string(),
    ]
}

/// Appends every line of `stream` to `sink` until the stream ends.
fn collect(stream: impl AsyncRead + Unpin + Send + 'static, sink: Arc<Mutex<String>>) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut lines = BufReader::new(stream).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let mut sink = sink.lock().unwrap();
            sink.push_str(&line);
            sink.push('\n');
        }
    })
}

/// A signal sent with `kill(1)` (`libc` is not a dependency, and `unsafe` is forbidden).
#[derive(Debug, Clone, Copy)]
pub enum Signal {
    Int,
    Stop,
    Cont,
    Term,
    Kill,
}

/// A running `finesettle` process. Dropping it kills the process (SIGKILL also ends a stopped one).
pub struct Replica {
    name: String,
    child: Child,
    pid: u32,
    stdout: Arc<Mutex<String>>,
    stderr: Arc<Mutex<String>>,
    readers: Vec<JoinHandle<()>>,
}

/// How a process ended, and everything it wrote.
#[derive(Debug)]
pub struct Finished {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Finished {
    /// Panics, showing the output, unless the process exited with code 0.
    #[track_caller]
    pub fn assert_success(&self) -> &Self {
        assert!(
            self.status.success(),
            "expected exit 0, got {}\n{}",
            self.status,
            self.output()
        );
        self
    }

    /// Panics, showing the output, unless the process exited with a non-zero code.
    #[track_caller]
    pub fn assert_failure(&self) -> &Self {
        assert!(
            self.status.code().is_some_and(|code| code != 0),
            "expected a non-zero exit code, got {}\n{}",
            self.status,
            self.output()
        );
        self
    }

    /// Both streams, for assertion messages.
    pub fn output(&self) -> String {
        format!("--- stdout\n{}--- stderr\n{}", self.stdout, self.stderr)
    }
}

impl Replica {
    pub fn signal(&self, signal: Signal) {
        let flag = match signal {
            Signal::Int => "-INT",
            Signal::Stop => "-STOP",
            Signal::Cont => "-CONT",
            Signal::Term => "-TERM",
            Signal::Kill => "-KILL",
        };
        let status = std::process::Command::new("kill")
            .args([flag, &self.pid.to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill {flag} {} failed: {status}", self.name);
    }

    /// Waits for the process to exit, for at most `within`; panics with its output after that.
    pub async fn wait(mut self, within: Duration) -> Finished {
        let status = match tokio::time::timeout(within, self.child.wait()).await {
            Ok(status) => status.expect("wait for the child"),
            Err(_) => panic!(
                "{} did not exit within {within:?}\n--- stdout\n{}--- stderr\n{}",
                self.name,
                self.stdout(),
                self.stderr()
            ),
        };
        // The pipes close when the process exits: the readers have everything once they end.
        for reader in std::mem::take(&mut self.readers) {
            let _ = reader.await;
        }
        Finished {
            status,
            stdout: self.stdout(),
            stderr: self.stderr(),
        }
    }

    /// Panics, showing the output, when the process has exited.
    pub fn assert_running(&mut self) {
        if let Ok(Some(status)) = self.child.try_wait() {
            panic!(
                "{} exited ({status})\n--- stdout\n{}--- stderr\n{}",
                self.name,
                self.stdout(),
                self.stderr()
            );
        }
    }

    pub fn stdout(&self) -> String {
        self.stdout.lock().unwrap().clone()
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// The first JSON log line whose message is `message`, waiting for it at most `within`.
    pub async fn log_line(&mut self, message: &str, within: Duration) -> serde_json::Value {
        let what = format!("{} to log {message:?}", self.name);
        poll_until(&what, within, async || {
            self.assert_running();
            self.stderr()
                .lines()
                .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
                .find(|line| line["message"] == message)
        })
        .await
    }

    /// The base URL of a `serve` process, read from its "serving" log line.
    pub async fn base_url(&mut self) -> String {
        let serving = self.log_line("serving", Duration::from_secs(30)).await;
        let addr = serving["http.addr"]
            .as_str()
            .expect("the serving line names its address");
        format!("http://{addr}")
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        // Also when the test panicked: no process outlives its test.
        let _ = self.child.start_kill();
    }
}

/// Stops `replica` (SIGSTOP) at a moment when it has settled at least one date and has the next
/// one RUNNING, and answers that execution. Between two dates the replica is let go on
/// (SIGCONT) and caught again a little later.
pub async fn stop_in_the_middle_of_a_date(replica: &mut Replica, pool: &sqlx::PgPool, instance_id: &str) -> Execution {
    let what = format!(
        "{} to be stopped in the middle of a date, after settling one",
        replica.name
    );
    poll_until(&what, Duration::from_secs(60), async || {
        replica.assert_running();
        let settled = executions(pool)
            .await
            .iter()
            .any(|e| e.instance_id == instance_id && e.status == "SUCCESS");
        if !settled {
            return None;
        }
        replica.signal(Signal::Stop);
        // A statement the process sent just before it stopped (a COMMIT, say) still completes
        // on the server; let it, so that what is read next is what the stopped process left.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let running = executions(pool)
            .await
            .into_iter()
            .find(|e| e.instance_id == instance_id && e.status == "RUNNING");
        if running.is_none() {
            replica.signal(Signal::Cont);
        }
        running
    })
    .await
}

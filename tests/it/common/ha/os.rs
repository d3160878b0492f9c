//! The operating system's side of the cluster: the `postgres` user, process groups, signals
//! (with `kill(1)`: `libc` is not a dependency and `unsafe` is forbidden), and the reaper that
//! cleans up when the test process dies without unwinding.

use std::path::Path;
use std::process::{Command, Stdio};

/// The uid and gid of the `postgres` user: PostgreSQL refuses to run as root, and only root
/// can start a process as another user.
pub fn postgres_user() -> (u32, u32) {
    let id = |args: &[&str]| -> u32 {
        let out = Command::new("id").args(args).output().expect("run id");
        assert!(out.status.success(), "no postgres user (apt-get install postgresql-15)");
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .expect("a numeric id")
    };
    assert_eq!(
        id(&["-u"]),
        0,
        "the HA cluster's harness runs as root, to start Patroni and PostgreSQL as the postgres user"
    );
    (id(&["-u", "postgres"]), id(&["-g", "postgres"]))
}

/// Sends `signal` (`KILL`, `STOP`, `CONT`) to the process group `pgid`. Errors are ignored: the
/// group may be gone already.
pub fn signal_group(signal: &str, pgid: u32) {
    // Never our own group, nor init's.
    if pgid <= 1 || Some(pgid) == process_group(std::process::id()) {
        return;
    }
    let _ = Command::new("kill")
        .args([&format!("-{signal}"), "--", &format!("-{pgid}")])
        .stderr(Stdio::null())
        .status();
}

/// Sends `signal` to the process `pid`, ignoring errors.
pub fn signal_process(signal: &str, pid: u32) {
    let _ = Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .stderr(Stdio::null())
        .status();
}

/// The process group of `pid` (field 5 of `/proc/<pid>/stat`), if it runs.
pub fn process_group(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: count after its end.
    let after_name = &stat[stat.rfind(')')? + 2..];
    after_name.split(' ').nth(2)?.parse().ok()
}

/// Whether `pid` runs (a zombie counts as gone: nothing of it is left but its exit status).
pub fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| stat.rfind(')').map(|end| stat[end + 2..].starts_with('Z')))
        .is_some_and(|zombie| !zombie)
}

/// `postmaster` and its children, the postmaster first. Each child of a postmaster calls
/// `setsid()`, so a signal to the postmaster's process group reaches none of them: they are
/// found by their parent, in `/proc`.
pub fn postgres_processes(postmaster: u32) -> Vec<u32> {
    let mut pids = vec![postmaster];
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return pids;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if parent(pid) == Some(postmaster) {
            pids.push(pid);
        }
    }
    pids
}

/// The walsenders among the children of `postmaster` (their command line names them).
pub fn walsenders(postmaster: u32) -> Vec<u32> {
    postgres_processes(postmaster)
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|line| String::from_utf8_lossy(&line).contains("walsender"))
        })
        .collect()
}

/// The parent of `pid` (field 4 of `/proc/<pid>/stat`).
fn parent(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 2..];
    after_name.split(' ').nth(1)?.parse().ok()
}

/// The postmaster's pid from `data/postmaster.pid`, while PostgreSQL runs.
pub fn postmaster_pid(data_dir: &Path) -> Option<u32> {
    let pid: u32 = std::fs::read_to_string(data_dir.join("postmaster.pid"))
        .ok()?
        .lines()
        .next()?
        .trim()
        .parse()
        .ok()?;
    running(pid).then_some(pid)
}

/// The file in the cluster's directory listing the process groups the harness started.
pub const GROUPS: &str = "groups";

/// A detached shell, in a process group of its own, that waits for this test process to end
/// and then kills what it started and removes `dir`: the cleanup of `Drop` when the process was
/// killed (a nextest timeout, Ctrl-C) and did not unwind. The processes it kills are named by
/// id: the groups listed in `dir/groups` (Patroni's, etcd's, HAProxy's, written by the harness)
/// and each postmaster, read from `postmaster.pid`, with its children (Patroni starts PostgreSQL
/// in a session of its own, and each child of the postmaster in turn calls `setsid()`). `Drop`
/// ends it once it cleaned up itself.
pub fn spawn_reaper(dir: &Path) -> std::process::Child {
    // `env kill`: dash's builtin takes no process group (`--`, then `-pgid`); procps' kill does.
    const SCRIPT: &str = r#"
        while kill -0 "$1" 2> /dev/null; do sleep 1; done
        for g in $(cat "$2/groups" 2> /dev/null); do env kill -KILL -- "-$g" 2> /dev/null; done
        for f in "$2"/node*/data/postmaster.pid; do
            p=$(head -1 "$f" 2> /dev/null) && [ -n "$p" ] && kill -KILL "$p" $(ps -o pid= --ppid "$p") 2> /dev/null
        done
        sleep 1
        rm -rf "$2"
    "#;
    use std::os::unix::process::CommandExt;
    Command::new("sh")
        .args(["-c", SCRIPT, "reaper", &std::process::id().to_string()])
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("spawn the reaper")
}

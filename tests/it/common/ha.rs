//! A real high-availability PostgreSQL cluster for one test, from Debian's packages: etcd (one
//! member), three PostgreSQL 15 nodes under Patroni, and HAProxy in front, routing to the node
//! whose Patroni answers `GET /primary` with 200 — the setup production gives the service
//! (issue 33). The service reaches it through the proxy only: sqlx takes one host.
//!
//! Everything listens on loopback ports of its own ([`ports`]), lives in a temporary directory,
//! and is killed, and the directory removed, when the [`HaCluster`] is dropped, also after a
//! panic; if the test process dies without unwinding, a reaper does the same ([`os`]).
//! PostgreSQL refuses to run as root, so Patroni (and the PostgreSQL it starts) runs as the
//! `postgres` user.

mod config;
mod os;
mod ports;
mod probe;
mod rest;

use std::fs::File;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

pub use self::config::Replication;
use self::config::{NodePorts, etcd_args, haproxy_cfg, patroni_yml};
pub use self::os::running as process_running;
pub use self::probe::PrimaryWatch;
pub use self::rest::Member;
use crate::common::checks::poll_until;

const NODES: [&str; 3] = ["node1", "node2", "node3"];
/// initdb, two base backups and Patroni's first loops, on a busy CI machine.
const START_WITHIN: Duration = Duration::from_secs(120);
/// Patroni's ttl (10 s) and a few of its loops, with room for a loaded machine.
const FAILOVER_WITHIN: Duration = Duration::from_secs(60);
/// Where Debian's `postgresql-15` puts its binaries (Patroni's `bin_dir`).
const PG_BIN: &str = "/usr/lib/postgresql/15/bin";

/// One node: its Patroni process (which starts and stops PostgreSQL) and its directory.
struct Node {
    name: &'static str,
    ports: NodePorts,
    dir: PathBuf,
    patroni: Child,
}

impl Node {
    fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }
}

/// A fault the harness caused: when, and which node was the leader then.
#[derive(Debug, Clone)]
pub struct Fault {
    pub at: Instant,
    pub old_leader: String,
}

/// A running cluster. Dropping it kills every process and removes its directory.
pub struct HaCluster {
    dir: PathBuf,
    nodes: Vec<Node>,
    etcd: Child,
    haproxy: Child,
    proxy: u16,
    stats: PathBuf,
    http: reqwest::Client,
    /// Walsenders stopped by [`HaCluster::hold_wal`], to continue or kill.
    held: Mutex<Vec<u32>>,
    reaper: Child,
}

impl HaCluster {
    /// Starts the cluster and waits until it has a leader running, both standbys running (one
    /// of them synchronous in [`Replication::Synchronous`]), and HAProxy has exactly the leader
    /// UP: HAProxy counts every server UP until its first checks fail, and a client let in
    /// before that may land on a standby.
    pub async fn start(replication: Replication) -> HaCluster {
        assert!(
            Path::new(PG_BIN).join("postgres").exists(),
            "PostgreSQL 15 is not installed (apt-get install postgresql-15)"
        );
        let dir = std::env::temp_dir().join(format!(
            "finesettle-ha-{}",
            &uuid::Uuid::new_v4().simple().to_string()[..8]
        ));
        std::fs::create_dir(&dir).expect("create the cluster's directory");
        let reaper = os::spawn_reaper(&dir);
        let groups = dir.join(os::GROUPS);
        let (etcd_client, etcd_peer) = (ports::free_port(), ports::free_port());
        let etcd = spawn_logged(
            Command::new("etcd").args(etcd_args(&dir.join("etcd"), etcd_client, etcd_peer)),
            &dir,
            "etcd",
            &groups,
        );
        let http = rest::http_client();
        poll_until("etcd to answer", START_WITHIN, async || {
            let health = http
                .get(format!("http://127.0.0.1:{etcd_client}/health"))
                .send()
                .await
                .ok()?;
            health.status().is_success().then_some(())
        })
        .await;

        let scope = dir.file_name().unwrap().to_string_lossy().into_owned();
        let (uid, gid) = os::postgres_user();
        let mut nodes = Vec::new();
        for name in NODES {
            let ports = NodePorts {
                postgres: ports::free_port(),
                rest: ports::free_port(),
            };
            let node_dir = dir.join(name);
            std::fs::create_dir(&node_dir).unwrap();
            let yml = node_dir.join("patroni.yml");
            std::fs::write(
                &yml,
                patroni_yml(&scope, name, &node_dir, ports, etcd_client, replication),
            )
            .unwrap();
            for path in [&node_dir, &yml] {
                std::os::unix::fs::chown(path, Some(uid), Some(gid)).expect("chown to postgres");
            }
            let mut command = Command::new("patroni");
            command
                .arg(&yml)
                .current_dir(&node_dir)
                .env_clear()
                .env("PATH", "/usr/bin:/bin")
                .env("HOME", &node_dir)
                .env("LC_ALL", "C.UTF-8")
                .uid(uid)
                .gid(gid);
            let patroni = spawn_logged(&mut command, &node_dir, "patroni", &groups);
            nodes.push(Node {
                name,
                ports,
                dir: node_dir,
                patroni,
            });
        }

        let proxy = ports::free_port();
        let stats = dir.join("haproxy.sock");
        let servers: Vec<(String, NodePorts)> = nodes.iter().map(|n| (n.name.to_owned(), n.ports)).collect();
        let cfg = dir.join("haproxy.cfg");
        std::fs::write(&cfg, haproxy_cfg(proxy, &stats, &servers)).unwrap();
        let haproxy = spawn_logged(
            Command::new("haproxy").arg("-f").arg(&cfg).arg("-db"),
            &dir,
            "haproxy",
            &groups,
        );

        let cluster = HaCluster {
            dir,
            nodes,
            etcd,
            haproxy,
            proxy,
            stats,
            http,
            held: Mutex::new(Vec::new()),
            reaper,
        };
        cluster.wait_healthy(replication).await;
        cluster
    }

    /// The URL of `database` through the proxy: wherever the primary is.
    pub fn url(&self, database: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{database}", self.proxy)
    }

    /// The cluster's temporary directory (data, configuration, logs), removed on drop.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The pids of the PostgreSQL postmasters running now.
    pub fn postmasters(&self) -> Vec<u32> {
        self.nodes
            .iter()
            .filter_map(|n| os::postmaster_pid(&n.data_dir()))
            .collect()
    }

    /// The members and their roles, as Patroni reports them.
    pub async fn members(&self) -> Vec<Member> {
        let ports: Vec<u16> = self.nodes.iter().map(|n| n.ports.rest).collect();
        poll_until("a Patroni node to list the members", FAILOVER_WITHIN, async || {
            rest::members(&self.http, &ports).await
        })
        .await
    }

    /// Waits until a node other than `old_leader` leads, and HAProxy has it, and only it, UP;
    /// answers its name. Right after a fault the old leader may still be reported: Patroni
    /// notices at its next loop, HAProxy at its next checks.
    pub async fn wait_new_leader(&self, old_leader: &str) -> String {
        let what = format!("a leader other than {old_leader}, and HAProxy routing to it alone");
        self.wait_until(&what, FAILOVER_WITHIN, |members| {
            members.iter().any(|m| m.role == "leader" && m.name != old_leader)
        })
        .await
    }

    /// The name of the node Patroni holds as leader, once it runs and HAProxy has it, and only
    /// it, UP.
    pub async fn leader(&self) -> String {
        self.wait_until("a leader, and HAProxy routing to it alone", FAILOVER_WITHIN, |_| true)
            .await
    }

    /// Patroni's planned switchover away from the current leader (`POST /switchover`), to the
    /// standby Patroni picks (the synchronous one in synchronous mode). Returns once Patroni
    /// reports it done.
    pub async fn switchover(&self) -> Fault {
        let old_leader = self.leader().await;
        let at = Instant::now();
        let rest = self.node(&old_leader).ports.rest;
        if let Err(refused) = rest::switchover(&self.http, rest, &old_leader).await {
            panic!("Patroni refused the switchover from {old_leader}: {refused}");
        }
        Fault { at, old_leader }
    }

    /// SIGKILL of the leader's postmaster: its backends end when they notice, and Patroni, with
    /// `primary_start_timeout: 0`, fails over to a standby instead of restarting it in place.
    /// Walsenders held by [`HaCluster::hold_wal`] are killed with it: what they never sent is lost.
    pub async fn kill_primary(&self) -> Fault {
        let old_leader = self.leader().await;
        let data = self.node(&old_leader).data_dir();
        let pid = os::postmaster_pid(&data).unwrap_or_else(|| panic!("{old_leader}'s postmaster is not running"));
        let at = Instant::now();
        os::signal_process("KILL", pid);
        for held in self.held.lock().unwrap().drain(..) {
            os::signal_process("KILL", held);
        }
        Fault { at, old_leader }
    }

    /// Stops (SIGSTOP) the primary's walsenders: the standbys receive no more WAL, and the
    /// primary's commits reach only its own disk (in synchronous mode they wait). The senders
    /// are stopped, not the receivers: a stopped receiver's kernel still takes in what was sent,
    /// up to its socket buffers, and hands it over when it goes on.
    pub async fn hold_wal(&self) {
        let leader = self.leader().await;
        let postmaster =
            os::postmaster_pid(&self.node(&leader).data_dir()).unwrap_or_else(|| panic!("{leader} is not running"));
        // A standby that has just started may not stream yet: one walsender per standby.
        let senders = poll_until("a walsender for each standby", START_WITHIN, async || {
            let senders = os::walsenders(postmaster);
            (senders.len() == NODES.len() - 1).then_some(senders)
        })
        .await;
        let mut held = self.held.lock().unwrap();
        for pid in senders {
            os::signal_process("STOP", pid);
            held.push(pid);
        }
    }

    /// Lets the walsenders held by [`HaCluster::hold_wal`] go on (SIGCONT).
    pub fn release_wal(&self) {
        for pid in self.held.lock().unwrap().drain(..) {
            os::signal_process("CONT", pid);
        }
    }

    fn node(&self, name: &str) -> &Node {
        self.nodes
            .iter()
            .find(|n| n.name == name)
            .unwrap_or_else(|| panic!("no node {name}"))
    }

    /// The start's wait: every member running, a leader, a synchronous standby when asked for.
    async fn wait_healthy(&self, replication: Replication) {
        let what = format!("the cluster to start ({replication:?}) in {}", self.dir.display());
        self.wait_until(&what, START_WITHIN, |members| {
            members.len() == NODES.len()
                && members.iter().all(|m| m.state == "running")
                && (replication == Replication::Asynchronous || members.iter().any(|m| m.role == "sync_standby"))
        })
        .await;
    }

    /// Waits until `also` holds for the members, one of them is the running leader and HAProxy
    /// has exactly it UP; answers the leader. Panics early, with the logs, if a daemon exited.
    async fn wait_until(&self, what: &str, within: Duration, also: impl Fn(&[Member]) -> bool) -> String {
        let ports: Vec<u16> = self.nodes.iter().map(|n| n.ports.rest).collect();
        poll_until(what, within, async || {
            self.assert_daemons_running();
            let members = rest::members(&self.http, &ports).await?;
            let leader = members.iter().find(|m| m.role == "leader" && m.state == "running")?;
            if !also(&members) {
                return None;
            }
            let up = rest::haproxy_up(&self.stats).await?;
            (up == [leader.name.clone()]).then(|| leader.name.clone())
        })
        .await
    }

    fn assert_daemons_running(&self) {
        for (name, pid) in [("etcd", self.etcd.id()), ("haproxy", self.haproxy.id())]
            .into_iter()
            .chain(self.nodes.iter().map(|n| (n.name, n.patroni.id())))
        {
            assert!(os::running(pid), "{name} exited\n{}", self.logs());
        }
    }

    /// The end of every daemon's log, for a failure's message.
    pub fn logs(&self) -> String {
        let mut logs = String::new();
        let files = [self.dir.join("etcd.log"), self.dir.join("haproxy.log")]
            .into_iter()
            .chain(self.nodes.iter().map(|n| n.dir.join("patroni.log")));
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(40).collect();
            logs.push_str(&format!("--- {}\n", file.display()));
            for line in tail.into_iter().rev() {
                logs.push_str(line);
                logs.push('\n');
            }
        }
        logs
    }
}

impl Drop for HaCluster {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("the HA cluster's logs:\n{}", self.logs());
        }
        self.release_wal();
        // Patroni first, so that it restarts nothing; then each PostgreSQL (which Patroni starts
        // in a session of its own), postmaster and children; then etcd and HAProxy.
        let postmasters: Vec<u32> = self
            .nodes
            .iter()
            .filter_map(|n| os::postmaster_pid(&n.data_dir()))
            .collect();
        for node in &mut self.nodes {
            os::signal_group("KILL", node.patroni.id());
            let _ = node.patroni.wait();
        }
        let postmasters: Vec<u32> = postmasters
            .into_iter()
            .chain(self.nodes.iter().filter_map(|n| os::postmaster_pid(&n.data_dir())))
            .collect();
        for postmaster in &postmasters {
            for pid in os::postgres_processes(*postmaster) {
                os::signal_process("KILL", pid);
            }
        }
        for daemon in [&mut self.etcd, &mut self.haproxy] {
            os::signal_group("KILL", daemon.id());
            let _ = daemon.wait();
        }
        // Removing the data under a PostgreSQL still exiting would race with its last writes.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while postmasters.iter().any(|pid| os::running(*pid)) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = std::fs::remove_dir_all(&self.dir);
        let _ = self.reaper.kill();
        let _ = self.reaper.wait();
    }
}

/// Spawns `command` in a process group of its own, its output in `log_dir/<name>.log`, and
/// appends the group to `groups`, the file the reaper reads.
fn spawn_logged(command: &mut Command, log_dir: &Path, name: &str, groups: &Path) -> Child {
    let log = File::create(log_dir.join(format!("{name}.log"))).expect("create a log file");
    let child = command
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("start {name} (apt-get install patroni etcd-server haproxy): {e}"));
    let mut groups = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(groups)
        .unwrap();
    writeln!(groups, "{}", child.id()).unwrap();
    child
}

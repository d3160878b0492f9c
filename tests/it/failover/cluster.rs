//! A real primary and standby of PostgreSQL 15 on loopback ports, for promotions: `initdb` a
//! small cluster, `pg_basebackup -R` a standby from it, and `pg_ctl promote` the standby, which
//! then writes on timeline 2. The machine's shared server cannot change timeline; this one can.
//!
//! The servers run as the user `postgres` (`runuser` when the tests run as root), each in a
//! directory of its own under the system's temporary directory, removed with the [`Node`]. They
//! are stopped (immediately) when dropped.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use sqlx::{Connection, PgConnection};
use tokio::process::Command;

use crate::common::checks::eventually;

/// Where Debian's PostgreSQL 15 server binaries are; `PG_BIN` names another place.
fn bin(name: &str) -> PathBuf {
    let dir = std::env::var("PG_BIN").unwrap_or_else(|_| "/usr/lib/postgresql/15/bin".to_owned());
    Path::new(&dir).join(name)
}

/// One PostgreSQL server of the cluster.
pub struct Node {
    pub port: u16,
    /// The node's own directory: its socket, and the data directory `data` (which `initdb` and
    /// `pg_basebackup` create with the permissions the server insists on).
    dir: PathBuf,
    data: PathBuf,
    running: bool,
}

impl Node {
    /// A fresh primary (`initdb`, trust on loopback, replication allowed), started.
    pub async fn primary() -> Node {
        let node = Node::empty("primary");
        as_postgres(
            &bin("initdb"),
            &[
                "-D",
                node.data(),
                "-U",
                "postgres",
                "--auth=trust",
                "--no-sync",
                "--no-instructions",
            ],
        )
        .await;
        node.configure().await;
        let mut node = node;
        node.start().await;
        node
    }

    /// A standby of `primary` from `pg_basebackup -R` (streaming from it), not started: until it
    /// is, it holds what the primary held at the backup and nothing after.
    pub async fn standby_of(primary: &Node) -> Node {
        let node = Node::empty("standby");
        let port = primary.port.to_string();
        as_postgres(
            &bin("pg_basebackup"),
            &[
                "-h",
                "127.0.0.1",
                "-p",
                &port,
                "-U",
                "postgres",
                "-D",
                node.data(),
                "-R",
                "-X",
                "stream",
                "-c",
                "fast",
                "--no-sync",
            ],
        )
        .await;
        node.configure().await;
        node
    }

    fn empty(role: &str) -> Node {
        let dir = std::env::temp_dir().join(format!("finesettle-failover-{role}-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).expect("create the node's directory");
        as_postgres_owned(&dir);
        Node {
            port: free_port(),
            data: dir.join("data"),
            dir,
            running: false,
        }
    }

    fn data(&self) -> &str {
        self.data.to_str().expect("a UTF-8 temporary path")
    }

    /// Its own port and socket directory, small and fast (no fsync: the tests lose nothing to a
    /// crash of the machine), appended last so they win over a base backup's copied settings.
    async fn configure(&self) {
        let settings = format!(
            "\nport = {}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{}'\n\
             fsync = off\nshared_buffers = 16MB\nmax_connections = 40\nwal_level = replica\n",
            self.port,
            self.dir.display()
        );
        let conf = self.data.join("postgresql.auto.conf");
        let mut text = std::fs::read_to_string(&conf).unwrap_or_default();
        text.push_str(&settings);
        std::fs::write(&conf, text).expect("write the node's settings");
        as_postgres_owned(&conf);
    }

    pub async fn start(&mut self) {
        let log = self.dir.join("server.log");
        as_postgres(
            &bin("pg_ctl"),
            &[
                "-D",
                self.data(),
                "-l",
                log.to_str().unwrap(),
                "-w",
                "-t",
                "30",
                "start",
            ],
        )
        .await;
        self.running = true;
    }

    /// Stops it at once, as a crash would: no shutdown checkpoint, nothing more sent to standbys.
    pub async fn kill(&mut self) {
        as_postgres(&bin("pg_ctl"), &["-D", self.data(), "-m", "immediate", "-w", "stop"]).await;
        self.running = false;
    }

    /// Promotes the (started) standby and waits until it accepts writes.
    pub async fn promote(&self) {
        as_postgres(&bin("pg_ctl"), &["-D", self.data(), "-w", "-t", "30", "promote"]).await;
        let url = self.url("postgres");
        eventually(
            "the promoted node to leave recovery",
            Duration::from_secs(30),
            async || {
                let Ok(mut conn) = PgConnection::connect(&url).await else {
                    return false;
                };
                sqlx::query_scalar::<_, bool>("select not pg_is_in_recovery()")
                    .fetch_one(&mut conn)
                    .await
                    .unwrap_or(false)
            },
        )
        .await;
    }

    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// The URL of `database` on this node, as the superuser.
    pub fn url(&self, database: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{database}", self.port)
    }

    /// Runs `sql` (one statement) on `database` as the superuser.
    pub async fn execute(&self, database: &str, sql: &'static str) {
        let mut conn = PgConnection::connect(&self.url(database))
            .await
            .expect("connect to the node");
        sqlx::raw_sql(sql).execute(&mut conn).await.expect("the statement runs");
        conn.close().await.ok();
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        if self.running {
            let _ = as_postgres_command(&bin("pg_ctl"))
                .args(["-D", self.data(), "-m", "immediate", "stop"])
                .output();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A free loopback port, as the system hands one out (released at once: a race with another
/// process is possible but unlikely).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

fn is_root() -> bool {
    std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| out.stdout.trim_ascii() == b"0")
}

/// `program` run as the user `postgres`: through `runuser` when root (PostgreSQL refuses to run
/// as root), as itself otherwise.
fn as_postgres_command(program: &Path) -> std::process::Command {
    if is_root() {
        let mut command = std::process::Command::new("runuser");
        command.args(["-u", "postgres", "--"]).arg(program);
        command
    } else {
        std::process::Command::new(program)
    }
}

async fn as_postgres(program: &Path, args: &[&str]) {
    let mut command = Command::from(as_postgres_command(program));
    let out = command.args(args).output().await.expect("run a PostgreSQL tool");
    assert!(
        out.status.success(),
        "{} {args:?} failed: {}{}",
        program.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Hands `path` to the user `postgres` (when root), so the server may use it.
fn as_postgres_owned(path: &Path) {
    if is_root() {
        let status = std::process::Command::new("chown")
            .args(["-R", "postgres:postgres"])
            .arg(path)
            .status()
            .expect("run chown");
        assert!(status.success(), "chown {} failed", path.display());
    }
}

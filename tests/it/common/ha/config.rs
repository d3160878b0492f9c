//! The daemons' configuration: etcd's command line, each node's `patroni.yml`, HAProxy's file.

use std::path::Path;

/// How the primary replicates to the standbys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replication {
    /// `synchronous_mode: true`: a commit is acknowledged once one standby has it, and Patroni
    /// promotes only that standby, so a failover loses no acknowledged commit.
    Synchronous,
    /// Patroni's default: a promotion may lose what the standby had not received yet.
    Asynchronous,
}

/// The ports of one node.
#[derive(Debug, Clone, Copy)]
pub struct NodePorts {
    pub postgres: u16,
    /// Patroni's REST API (`GET /primary`, `POST /switchover`, `GET /cluster`).
    pub rest: u16,
}

/// etcd's arguments: one member on loopback, its data in `dir`. `--unsafe-no-fsync`: the cluster
/// lives for one test, and an fsync per write of Patroni's leader key slows every loop of a busy
/// CI machine for nothing.
pub fn etcd_args(dir: &Path, client: u16, peer: u16) -> Vec<String> {
    let client = format!("http://127.0.0.1:{client}");
    let peer = format!("http://127.0.0.1:{peer}");
    [
        "--name",
        "ha",
        "--data-dir",
        &dir.display().to_string(),
        "--listen-client-urls",
        &client,
        "--advertise-client-urls",
        &client,
        "--listen-peer-urls",
        &peer,
        "--initial-advertise-peer-urls",
        &peer,
        "--initial-cluster",
        &format!("ha={peer}"),
        "--unsafe-no-fsync",
    ]
    .map(str::to_owned)
    .to_vec()
}

/// One node's `patroni.yml`.
///
/// - `ttl: 10`, `loop_wait: 2`, `retry_timeout: 5`: a lost leader is noticed within seconds.
/// - `primary_start_timeout: 0`: a primary whose postmaster crashed is failed over at once to a
///   standby, instead of restarted in place by crash recovery (Patroni's default waits 300 s for
///   that), so a killed postmaster is a real failover, with a new timeline on another node. In
///   synchronous mode that loses nothing acknowledged, which is why Patroni's documentation
///   recommends it there.
/// - `use_pg_rewind`: the old primary, which may have written WAL its successor never received,
///   rejoins as a standby instead of staying down.
/// - trust on loopback and `fsync: off`: nothing but the tests connects, and a process killed
///   loses nothing the kernel already has (only a machine crash would, and then the cluster is
///   gone with its test anyway).
pub fn patroni_yml(
    scope: &str,
    name: &str,
    dir: &Path,
    ports: NodePorts,
    etcd: u16,
    replication: Replication,
) -> String {
    let dir = dir.display();
    let synchronous = replication == Replication::Synchronous;
    let NodePorts { postgres, rest } = ports;
    format!(
        r#"scope: {scope}
namespace: /finesettle-test/
name: {name}
log:
  level: INFO
restapi:
  listen: 127.0.0.1:{rest}
  connect_address: 127.0.0.1:{rest}
etcd3:
  hosts: 127.0.0.1:{etcd}
bootstrap:
  dcs:
    ttl: 10
    loop_wait: 2
    retry_timeout: 5
    synchronous_mode: {synchronous}
    primary_start_timeout: 0
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        wal_log_hints: 'on'
        max_connections: 100
  initdb:
    - encoding: UTF8
    - locale: C
  pg_hba:
    - local all all trust
    - host all all 127.0.0.1/32 trust
    - host replication all 127.0.0.1/32 trust
postgresql:
  listen: 127.0.0.1:{postgres}
  connect_address: 127.0.0.1:{postgres}
  data_dir: {dir}/data
  bin_dir: /usr/lib/postgresql/15/bin
  pgpass: {dir}/pgpass
  authentication:
    superuser:
      username: postgres
    replication:
      username: replicator
    rewind:
      username: postgres
  parameters:
    unix_socket_directories: {dir}
    shared_buffers: 32MB
    fsync: 'off'
"#
    )
}

/// HAProxy's configuration: one TCP listener on `proxy` whose only server UP is the node whose
/// Patroni answers `GET /primary` with 200 (the usual Patroni setup). Checks every 500 ms, two
/// failures mark a node down, and `shutdown-sessions` closes the sessions of a node marked down,
/// so a client never keeps talking to a demoted primary. `stats` is the runtime API's socket,
/// from which the harness reads which servers are UP.
pub fn haproxy_cfg(proxy: u16, stats: &Path, nodes: &[(String, NodePorts)]) -> String {
    let mut cfg = format!(
        r#"global
    maxconn 500
    stats socket {stats} mode 600 level admin
defaults
    mode tcp
    timeout connect 2s
    timeout client 30m
    timeout server 30m
    timeout check 1s
listen postgres
    bind 127.0.0.1:{proxy}
    option httpchk GET /primary
    http-check expect status 200
    default-server inter 500ms fall 2 rise 1 on-marked-down shutdown-sessions
"#,
        stats = stats.display()
    );
    for (name, ports) in nodes {
        cfg.push_str(&format!(
            "    server {name} 127.0.0.1:{} check port {}\n",
            ports.postgres, ports.rest
        ));
    }
    cfg
}

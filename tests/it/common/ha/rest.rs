//! What the harness asks the daemons: Patroni's REST API (the members and their roles, a
//! switchover) and HAProxy's runtime API (which servers are UP).

use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A member as Patroni's `GET /cluster` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub name: String,
    /// `leader`, `sync_standby` or `replica`.
    pub role: String,
    /// `running`, `stopped`, `starting`, `crashed`...
    pub state: String,
}

/// A client for the REST APIs: short time-outs, since a node may be stopped (SIGSTOP) or gone.
pub fn http_client() -> reqwest::Client {
    finesettle::tls::install_crypto_provider();
    reqwest::Client::builder()
        .timeout(Duration::from_secs(2))
        .build()
        .expect("an HTTP client")
}

/// The cluster's members as the first node in `rest_ports` that answers sees them (from etcd).
pub async fn members(http: &reqwest::Client, rest_ports: &[u16]) -> Option<Vec<Member>> {
    for port in rest_ports {
        let Ok(reply) = http.get(format!("http://127.0.0.1:{port}/cluster")).send().await else {
            continue;
        };
        let Ok(body) = reply.json::<Value>().await else {
            continue;
        };
        let members = body["members"].as_array()?;
        return Some(
            members
                .iter()
                .map(|m| Member {
                    name: m["name"].as_str().unwrap_or_default().to_owned(),
                    role: m["role"].as_str().unwrap_or_default().to_owned(),
                    state: m["state"].as_str().unwrap_or_default().to_owned(),
                })
                .collect(),
        );
    }
    None
}

/// Patroni's planned switchover away from `leader`, to a standby of Patroni's choosing (in
/// synchronous mode, the synchronous standby). Patroni answers once it is done, or failed.
pub async fn switchover(http: &reqwest::Client, rest_port: u16, leader: &str) -> Result<String, String> {
    let reply = http
        .post(format!("http://127.0.0.1:{rest_port}/switchover"))
        .json(&serde_json::json!({ "leader": leader }))
        .timeout(Duration::from_secs(60))
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let status = reply.status();
    let text = reply.text().await.unwrap_or_default();
    if status.is_success() {
        Ok(text)
    } else {
        Err(format!("{status}: {text}"))
    }
}

/// The servers of HAProxy's `postgres` proxy whose status is UP, from `show stat` on the
/// runtime API's socket (CSV: proxy name, server name, ..., status in the 18th column).
pub async fn haproxy_up(stats: &Path) -> Option<Vec<String>> {
    let mut socket = tokio::net::UnixStream::connect(stats).await.ok()?;
    socket.write_all(b"show stat\n").await.ok()?;
    let mut csv = String::new();
    tokio::time::timeout(Duration::from_secs(2), socket.read_to_string(&mut csv))
        .await
        .ok()?
        .ok()?;
    let up = csv
        .lines()
        .filter(|line| !line.starts_with('#'))
        .map(|line| line.split(',').collect::<Vec<_>>())
        .filter(|fields| fields.len() > 17 && fields[0] == "postgres")
        .filter(|fields| fields[1] != "FRONTEND" && fields[1] != "BACKEND")
        .filter(|fields| fields[17].starts_with("UP"))
        .map(|fields| fields[1].to_owned())
        .collect();
    Some(up)
}

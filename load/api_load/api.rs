//! A thin client of the replicas' HTTP API: one connection pool, one token, several base URLs.

use std::time::Duration;

use anyhow::{Context, bail};
use reqwest::{Method, StatusCode};
use serde_json::Value;

#[derive(Clone)]
pub struct Api {
    client: reqwest::Client,
    urls: Vec<String>,
    auth: String,
}

/// One answered request: its status and body (parsed when JSON).
pub struct Answer {
    pub status: StatusCode,
    pub body: Value,
}

impl Api {
    pub fn new(urls: Vec<String>, token: &str) -> anyhow::Result<Self> {
        anyhow::ensure!(!urls.is_empty(), "LOAD_URLS names no replica");
        finesettle::tls::install_crypto_provider();
        let client = reqwest::Client::builder()
            // Far above any expected latency: a request this slow is an error in the table.
            .timeout(Duration::from_secs(30))
            .pool_max_idle_per_host(64)
            .build()?;
        Ok(Api {
            client,
            urls,
            auth: format!("Bearer {token}"),
        })
    }

    pub fn replicas(&self) -> usize {
        self.urls.len()
    }

    /// Sends a request to replica `replica` (modulo their number) and reads the whole answer.
    pub async fn call(
        &self,
        replica: usize,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> anyhow::Result<Answer> {
        let url = format!("{}{path}", self.urls[replica % self.urls.len()]);
        let mut request = self.client.request(method, &url).header("authorization", &self.auth);
        if let Some(body) = body {
            request = request
                .header("content-type", "application/json")
                .body(serde_json::to_vec(body)?);
        }
        let response = request.send().await.with_context(|| format!("{url}: no answer"))?;
        let status = response.status();
        let bytes = response
            .bytes()
            .await
            .with_context(|| format!("{url}: body cut short"))?;
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Ok(Answer { status, body })
    }

    /// Like [`Api::call`], failing unless the answer has status `expected`.
    pub async fn expect(
        &self,
        replica: usize,
        method: Method,
        path: &str,
        body: Option<&Value>,
        expected: StatusCode,
    ) -> anyhow::Result<Value> {
        let answer = self.call(replica, method.clone(), path, body).await?;
        if answer.status != expected {
            bail!(
                "{method} {path}: {} (expected {expected}): {}",
                answer.status,
                answer.body
            );
        }
        Ok(answer.body)
    }
}

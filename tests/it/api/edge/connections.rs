//! Case 2: slow headers are timed out and connections are bounded. Case 3 (the 408 of a trickled
//! body is problem+json) is here too: it is the same kind of client.

use std::time::Duration;

use tokio::io::AsyncWriteExt;

use super::raw::{connect, read_until_closed};
use crate::common::{ADMIN_TOKEN, spawn_app_with};

/// Long enough that a connection the server left open is not mistaken for one it closed.
const PATIENCE: Duration = Duration::from_secs(20);

#[tokio::test]
async fn a_client_that_sends_no_headers_or_half_of_them_is_disconnected() {
    let app = spawn_app_with(|s| s.header_read_timeout = Duration::from_secs(1)).await;

    // Connected, and not a byte sent.
    let mut silent = connect(&app).await;
    // A request line and one header, then nothing.
    let mut half = connect(&app).await;
    half.write_all(b"GET /api/v1/members HTTP/1.1\r\nHost: finesettle\r\n")
        .await
        .unwrap();

    for (name, stream) in [("silent", &mut silent), ("half a head", &mut half)] {
        let ended = read_until_closed(stream, PATIENCE).await;
        assert!(
            ended.is_some(),
            "the {name} connection is still open after {PATIENCE:?}"
        );
    }
}

#[tokio::test]
async fn a_client_that_trickles_one_header_at_a_time_is_disconnected() {
    let app = spawn_app_with(|s| s.header_read_timeout = Duration::from_secs(1)).await;
    let stream = connect(&app).await;
    let (mut reader, mut writer) = stream.into_split();
    // A header every 300 ms, each well inside the timeout, the blank line never.
    let trickle = tokio::spawn(async move {
        writer.write_all(b"GET /healthz HTTP/1.1\r\n").await.ok()?;
        for n in 0.. {
            tokio::time::sleep(Duration::from_millis(300)).await;
            writer.write_all(format!("X-Slow-{n}: 1\r\n").as_bytes()).await.ok()?;
        }
        Some(())
    });
    let ended = tokio::time::timeout(PATIENCE, async {
        let mut byte = [0_u8; 1];
        let _ = tokio::io::AsyncReadExt::read(&mut reader, &mut byte).await;
    })
    .await;
    trickle.abort();
    assert!(ended.is_ok(), "a trickling client kept its connection for {PATIENCE:?}");
}

#[tokio::test]
async fn connections_beyond_the_bound_wait_until_one_ends() {
    let app = spawn_app_with(|s| {
        s.max_http_connections = 1;
        s.header_read_timeout = Duration::from_secs(60);
    })
    .await;
    // The one connection the server serves, held by a client that sends nothing.
    let idle = connect(&app).await;
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(2))
        .build()
        .unwrap();
    let url = format!("{}/healthz", app.address);
    let waiting = client.get(&url).send().await;
    assert!(
        waiting.is_err(),
        "a second connection was served while the bound was taken: {waiting:?}"
    );

    // The idle client goes away: its place is free, the next request is served.
    drop(idle);
    let client = reqwest::Client::builder().timeout(PATIENCE).build().unwrap();
    let served = client.get(&url).send().await.expect("served once a place is free");
    assert_eq!(served.status(), 200);
}

#[tokio::test]
async fn a_body_that_never_arrives_is_a_408_problem() {
    let app = spawn_app_with(|s| s.request_timeout = Duration::from_secs(1)).await;
    let mut stream = connect(&app).await;
    let head = format!(
        "POST /api/v1/members HTTP/1.1\r\nHost: finesettle\r\nAuthorization: Bearer {ADMIN_TOKEN}\r\n\
         Content-Type: application/json\r\nContent-Length: 100\r\nConnection: close\r\n\r\n{{\"name\":"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let response = read_until_closed(&mut stream, PATIENCE)
        .await
        .expect("the server answers and closes");
    assert!(response.starts_with("HTTP/1.1 408"), "{response}");
    let lower = response.to_lowercase();
    assert!(lower.contains("content-type: application/problem+json"), "{response}");
    assert!(response.contains("\"status\":408"), "{response}");
    assert_eq!(app.row_counts().await.iter().find(|(t, _)| t == "member").unwrap().1, 0);
}

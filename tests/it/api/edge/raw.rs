//! Raw TCP to the test app, for what an HTTP client library will not send: headers a byte at a
//! time, a body that never comes.

use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

use crate::common::TestApp;

pub async fn connect(app: &TestApp) -> TcpStream {
    TcpStream::connect(("127.0.0.1", app.port))
        .await
        .expect("connect to the app")
}

/// Reads until the server closes the connection, for at most `within`; answers what it sent, or
/// `None` if the connection was still open at the end.
pub async fn read_until_closed(stream: &mut TcpStream, within: Duration) -> Option<String> {
    let mut received = Vec::new();
    let read = tokio::time::timeout(within, async {
        let mut buffer = [0_u8; 4096];
        loop {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(n) => received.extend_from_slice(&buffer[..n]),
            }
        }
    })
    .await;
    read.ok().map(|()| String::from_utf8_lossy(&received).into_owned())
}

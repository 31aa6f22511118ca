//! The loopback redirect of [`OAuth::loopback`](super::OAuth::loopback): a listener on `127.0.0.1` for the one
//! request the browser makes when the authorization server sends it back.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::AuthorizeResult;

/// How long the listener waits for the browser.
const WAIT: Duration = Duration::from_secs(300);
/// The path the browser comes back to.
const PATH: &str = "/callback";

/// The redirect URI of a loopback listener on `port`.
pub(crate) fn redirect_uri(port: u16) -> String {
    format!("http://127.0.0.1:{port}{PATH}")
}

/// Listens on `127.0.0.1:port`, hands `url` to `open`, and returns the URL of the first request to [`PATH`].
pub(crate) async fn receive(
    port: u16,
    url: &reqwest::Url,
    open: &(dyn Fn(&reqwest::Url) + Send + Sync),
) -> AuthorizeResult {
    let listener = TcpListener::bind(("127.0.0.1", port))
        .await
        .map_err(|e| format!("could not listen on 127.0.0.1:{port} for the browser's redirect: {e}"))?;
    open(url);
    let waiting = async {
        loop {
            let (mut stream, _) = listener.accept().await?;
            let mut head = Vec::new();
            let mut buf = [0u8; 2048];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 * 1024 {
                let n = stream.read(&mut buf).await?;
                if n == 0 {
                    break;
                }
                head.extend_from_slice(&buf[..n]);
            }
            let text = String::from_utf8_lossy(&head);
            let target = text.lines().next().and_then(|line| line.split(' ').nth(1)).unwrap_or_default().to_owned();
            if !target.starts_with(PATH) {
                let _ =
                    stream.write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n").await;
                continue;
            }
            let page = "<!doctype html><title>Signed in</title><p>You can close this window and return to the program.";
            let answer = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}",
                page.len()
            );
            let _ = stream.write_all(answer.as_bytes()).await;
            return Ok::<String, std::io::Error>(format!("http://127.0.0.1:{port}{target}"));
        }
    };
    match tokio::time::timeout(WAIT, waiting).await {
        Ok(Ok(landed)) => Ok(landed),
        Ok(Err(e)) => Err(format!("the redirect listener on 127.0.0.1:{port} failed: {e}").into()),
        Err(_) => Err(format!("the browser did not come back to 127.0.0.1:{port} within {WAIT:?}").into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_listener_returns_where_the_browser_came_back_to() {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let url = reqwest::Url::parse("https://as.example.com/authorize?x=1").unwrap();
        let browser = move |_: &reqwest::Url| {
            tokio::spawn(async move {
                // A stray request first (a favicon), then the redirect.
                for path in ["/favicon.ico", "/callback?code=abc&state=xyz"] {
                    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.unwrap();
                    stream.write_all(format!("GET {path} HTTP/1.1\r\nhost: x\r\n\r\n").as_bytes()).await.unwrap();
                    let mut answer = Vec::new();
                    stream.read_to_end(&mut answer).await.unwrap();
                }
            });
        };
        let landed = receive(port, &url, &browser).await.unwrap();
        assert_eq!(landed, format!("http://127.0.0.1:{port}/callback?code=abc&state=xyz"));
        assert_eq!(redirect_uri(port), format!("http://127.0.0.1:{port}/callback"));
    }
}

//! `mcp::client` against hostile or broken servers: over stdio a line past the frame limit, lines that are not
//! UTF-8 or not JSON, a server that stops reading its stdin, one that never answers, one that exits at start or in
//! the middle of a call; over HTTP an SSE stream without blank lines and a flood of pings, HTTPS with a
//! self-signed certificate the test trusts, headers on every request and a readable 401, and transport errors that
//! say what failed.
//!
//! The stdio servers are small Python scripts (a fake needs to misbehave on cue); the HTTP ones are raw sockets
//! or the project's own `Server::http_router()`.

use std::future::IntoFuture;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp::client::{Client, EraChoice, Error, TransportErrorKind};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

#[path = "common/tls.rs"]
mod tls;

/// Long enough for any healthy exchange on a loaded machine; what must not hang is bounded by this.
const WAIT: Duration = Duration::from_secs(20);

/// A 2025-era stdio server in Python: answers `initialize`, and `tools/call` by the tool's name, with the given
/// behaviours (Python source, in a function `act(name, id, out)` that returns True when it answered).
const FAKE: &str = r#"
import sys, json, time, os
out = sys.stdout.buffer
def send(obj):
    out.write(json.dumps(obj).encode() + b"\n"); out.flush()
def act(name, id, out):
ACT
    return False
for line in sys.stdin.buffer:
    msg = json.loads(line)
    method, id = msg.get("method"), msg.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": id, "result": {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
              "serverInfo": {"name": "fake", "version": "1"}}})
    elif method == "tools/call":
        name = msg["params"]["name"]
        if not act(name, id, out):
            send({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": name}]}})
    elif id is not None:
        send({"jsonrpc": "2.0", "id": id, "result": {}})
"#;

/// A Python fake server with `act` as its behaviours (indented four spaces).
fn fake(act: &str) -> tokio::process::Command {
    let act: String = act.lines().map(|l| format!("    {l}\n")).collect();
    let mut command = tokio::process::Command::new("python3");
    command.arg("-u").arg("-c").arg(FAKE.replace("ACT\n", &act));
    command
}

fn legacy() -> mcp::client::ClientBuilder {
    Client::builder().era(EraChoice::V2025).handshake_timeout(WAIT)
}

/// The tests that measure this process's memory take turns; the others still run beside them, so a bound is
/// set well below what holding the flood would take (400 MiB and more) and well above what they add.
static MEASURING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// This process's resident memory, in bytes (Linux).
fn rss() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok())
        .map_or(0, |kb| kb * 1024)
}

#[tokio::test]
async fn a_line_over_the_frame_limit_is_skipped_and_its_call_fails_while_later_calls_work() {
    let act = r#"
if name == "long":
    out.write(b'{"jsonrpc":"2.0","id":' + json.dumps(id).encode() + b',"result":{"text":"' + b"x" * (3 << 20) + b'"}}\n')
    out.flush()
    return True
"#;
    let client = legacy().frame_limit(1 << 20).stdio(fake(act)).await.unwrap();
    let long = tokio::time::timeout(WAIT, client.call_tool("long", json!({}))).await.expect("the call is not wedged");
    match long {
        Err(e) => assert_eq!(e, Error::FrameTooLarge { limit: 1 << 20 }),
        Ok(answer) => panic!("read a line of {} bytes past the limit", answer.raw.to_string().len()),
    }
    let next = tokio::time::timeout(WAIT, client.call_tool("echo", json!({}))).await.unwrap().unwrap();
    assert_eq!(next.text(), Some("echo"), "the read loop goes on after the long line");
}

#[tokio::test]
async fn a_line_without_end_is_not_held() {
    // 400 MiB on one line that never ends; the client keeps none of it.
    let act = r#"
if name == "endless":
    out.write(b'{"jsonrpc":"2.0","id":' + json.dumps(id).encode() + b',"result":"')
    chunk = b"y" * (1 << 20)
    for _ in range(400):
        out.write(chunk)
    out.flush()
    time.sleep(60)
"#;
    let _turn = MEASURING.lock().await;
    let client = legacy().frame_limit(4 << 20).stdio(fake(act)).await.unwrap();
    let before = rss();
    let outcome = tokio::time::timeout(WAIT, client.call_tool("endless", json!({}))).await.expect("no hang");
    assert_eq!(outcome.unwrap_err(), Error::FrameTooLarge { limit: 4 << 20 });
    // Let the rest of the line stream through the reader.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let grown = rss().saturating_sub(before);
    assert!(grown < 200 << 20, "the client grew by {} MiB reading a line it skips", grown >> 20);
}

#[tokio::test]
async fn lines_that_are_not_utf8_or_not_json_are_skipped_and_the_connection_goes_on() {
    let act = r#"
if name == "garbage":
    out.write(b"\xff\xfe not UTF-8 \xc3\x28\n{not json\n[1, 2\n\n")
    out.flush()
"#;
    let client = legacy().stdio(fake(act)).await.unwrap();
    let garbage = tokio::time::timeout(WAIT, client.call_tool("garbage", json!({}))).await.unwrap().unwrap();
    assert_eq!(garbage.text(), Some("garbage"));
    let later = tokio::time::timeout(WAIT, client.call_tool("later", json!({}))).await.unwrap().unwrap();
    assert_eq!(later.text(), Some("later"), "the bad lines did not end the read loop");
}

#[tokio::test]
async fn calls_to_a_server_that_stops_reading_stdin_end_by_their_deadline() {
    let act = r#"
if name == "stop":
    time.sleep(120)
"#;
    let client = legacy().stdio(fake(act)).await.unwrap();
    // The server answers nothing more and reads nothing more.
    let stop = client.call_tool("stop", json!({}));
    let _stop = tokio::spawn(async move { stop.await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let padding = "p".repeat(4096);
    let started = Instant::now();
    let calls = (0..3000).map(|i| {
        let client = client.clone();
        let padding = padding.clone();
        tokio::spawn(async move {
            client.call_tool("echo", json!({"i": i, "pad": padding})).timeout(Duration::from_secs(2)).await
        })
    });
    let calls: Vec<_> = calls.collect();
    let mut timeouts = 0;
    for call in calls {
        let outcome = tokio::time::timeout(Duration::from_secs(6), call).await.expect("a call outlived its deadline");
        match outcome.unwrap() {
            Err(Error::Timeout(_)) => timeouts += 1,
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(timeouts, 3000);
    assert!(started.elapsed() < Duration::from_secs(6), "took {:?}", started.elapsed());
}

#[tokio::test]
async fn the_handshake_with_a_silent_server_times_out() {
    let mut silent = tokio::process::Command::new("sleep");
    silent.arg("60");
    let started = Instant::now();
    let outcome =
        tokio::time::timeout(WAIT, Client::builder().handshake_timeout(Duration::from_millis(500)).stdio(silent))
            .await
            .expect("the handshake has a deadline");
    assert_eq!(outcome.unwrap_err(), Error::Timeout(Duration::from_millis(500)));
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(mcp::client::DEFAULT_HANDSHAKE_TIMEOUT, Duration::from_secs(30));
}

#[tokio::test]
async fn a_server_that_exits_at_once_fails_the_handshake_at_once() {
    for era in [EraChoice::Auto, EraChoice::V2025, EraChoice::V2026] {
        let started = Instant::now();
        let outcome =
            tokio::time::timeout(WAIT, Client::builder().era(era).stdio(tokio::process::Command::new("true")))
                .await
                .expect("no hang");
        match outcome.unwrap_err() {
            Error::Exited { status, stderr } => {
                assert!(status.is_some_and(|s| s.success()), "{era:?}: {status:?}");
                assert_eq!(stderr, "");
            }
            other => panic!("{era:?}: {other:?}"),
        }
        assert!(started.elapsed() < Duration::from_secs(5), "{era:?}: {:?}", started.elapsed());
    }
}

#[tokio::test]
async fn a_server_that_fails_at_start_reports_its_exit_status_and_stderr() {
    let mut command = tokio::process::Command::new("sh");
    command.arg("-c").arg(
        "for i in $(seq 1 500); do echo \"noise line $i\" >&2; done; \
         echo 'error: start-up failed: unable to open database file' >&2; exit 1",
    );
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let lines = seen.clone();
    let outcome = tokio::time::timeout(
        WAIT,
        Client::builder().on_stderr(move |line| lines.lock().unwrap().push(line.to_owned())).stdio(command),
    )
    .await
    .expect("no hang");
    let error = outcome.unwrap_err();
    let Error::Exited { status, stderr } = &error else { panic!("{error:?}") };
    assert_eq!(status.and_then(|s| s.code()), Some(1));
    assert!(stderr.ends_with("error: start-up failed: unable to open database file"), "{stderr}");
    assert!(stderr.len() <= 4096, "a bounded tail: {} bytes", stderr.len());
    assert!(!stderr.contains("noise line 1\n"), "only the end is kept");
    let message = error.to_string();
    assert!(message.contains("exit status: 1") && message.contains("unable to open database file"), "{message}");
    // The stderr was still handed on, every line of it.
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 501, "{:?}", seen.last());
    assert_eq!(seen.last().map(String::as_str), Some("error: start-up failed: unable to open database file"));
}

#[tokio::test]
async fn pending_and_later_calls_fail_at_once_when_the_server_dies() {
    let act = r#"
if name == "die":
    sys.stderr.write("fatal: the disk is full\n"); sys.stderr.flush()
    os._exit(3)
if name == "slow":
    return True
"#;
    let client = legacy().stdio(fake(act)).await.unwrap();
    let slow = tokio::spawn(client.call_tool("slow", json!({})).into_future());
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = Instant::now();
    let died = tokio::time::timeout(WAIT, client.call_tool("die", json!({}))).await.expect("no hang");
    let slow = tokio::time::timeout(WAIT, slow).await.expect("the pending call fails too").unwrap();
    for outcome in [died.map(|_| ()), slow.map(|_| ())] {
        match outcome.unwrap_err() {
            Error::Exited { status, stderr } => {
                assert_eq!(status.and_then(|s| s.code()), Some(3));
                assert_eq!(stderr, "fatal: the disk is full");
            }
            other => panic!("{other:?}"),
        }
    }
    assert!(started.elapsed() < Duration::from_secs(5));
    let later = tokio::time::timeout(WAIT, client.call_tool("echo", json!({}))).await.expect("no hang");
    assert!(matches!(later, Err(Error::Exited { .. })), "{later:?}");
}

// ---------------------------------------------------------------------------------------------------------------
// HTTP against raw sockets

/// What a fake HTTP server answers a POST with.
enum Answer {
    Json(Value),
    /// A `text/event-stream` body written by the function, then the connection closes.
    Stream(Box<dyn FnOnce(tokio::net::tcp::OwnedWriteHalf) -> futures_like::BoxFuture + Send>),
    /// 202, after holding the request for the duration.
    Accepted(Duration),
}

mod futures_like {
    pub type BoxFuture = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;
}

/// A 2026-era fake: answers `server/discover` itself and every other POST with `answer(message)`.
async fn fake_http(answer: impl Fn(Value) -> Answer + Send + Sync + 'static) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let answer = Arc::new(answer);
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let answer = answer.clone();
            tokio::spawn(async move {
                let (mut read, mut write) = socket.into_split();
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if read.read(&mut byte).await.unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&head).to_ascii_lowercase();
                let length = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse::<usize>().ok())
                    .unwrap_or(0);
                let mut body = vec![0u8; length];
                if read.read_exact(&mut body).await.is_err() {
                    return;
                }
                let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                let reply = if message["method"] == "server/discover" {
                    Answer::Json(json!({"jsonrpc": "2.0", "id": message["id"], "result": {
                        "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "fake", "version": "1"}}}}))
                } else {
                    answer(message)
                };
                match reply {
                    Answer::Json(value) => {
                        let body = value.to_string();
                        let response = format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                            body.len()
                        );
                        let _ = write.write_all(response.as_bytes()).await;
                    }
                    Answer::Stream(writer) => {
                        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
                        if write.write_all(head.as_bytes()).await.is_ok() {
                            writer(write).await;
                        }
                    }
                    Answer::Accepted(hold) => {
                        tokio::time::sleep(hold).await;
                        let _ = write
                            .write_all(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                            .await;
                    }
                }
            });
        }
    });
    format!("http://{addr}/mcp")
}

#[tokio::test]
async fn an_sse_stream_without_blank_lines_is_bounded_by_the_frame_limit() {
    let sent = Arc::new(AtomicUsize::new(0));
    let counter = sent.clone();
    let url = fake_http(move |_| {
        let counter = counter.clone();
        Answer::Stream(Box::new(move |mut write| {
            Box::pin(async move {
                let line = format!("data: {}\n", "z".repeat(64 * 1024));
                // Up to 512 MiB of one event that never ends, unless the client hangs up.
                for _ in 0..8192 {
                    if write.write_all(line.as_bytes()).await.is_err() {
                        return;
                    }
                    counter.fetch_add(line.len(), Ordering::Relaxed);
                }
            })
        }))
    })
    .await;
    let _turn = MEASURING.lock().await;
    let client = Client::builder().era(EraChoice::V2026).frame_limit(2 << 20).http(url).await.unwrap();
    let before = rss();
    let outcome = tokio::time::timeout(WAIT, client.call_tool("flood", json!({}))).await.expect("no hang");
    assert_eq!(outcome.unwrap_err(), Error::FrameTooLarge { limit: 2 << 20 });
    let grown = rss().saturating_sub(before);
    assert!(grown < 200 << 20, "the client grew by {} MiB", grown >> 20);
    assert!(sent.load(Ordering::Relaxed) < 256 << 20, "the client stopped reading once over the limit");
}

#[tokio::test]
async fn a_flood_of_pings_is_answered_with_bounded_concurrency() {
    const PINGS: usize = 3000;
    let answering = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let (now, peak) = (answering.clone(), most.clone());
    let url = fake_http(move |message| {
        if message.get("method").is_none() {
            // An answer to one of our pings: held a while, so answers in flight add up.
            let n = now.fetch_add(1, Ordering::SeqCst) + 1;
            peak.fetch_max(n, Ordering::SeqCst);
            let now = now.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(300)).await;
                now.fetch_sub(1, Ordering::SeqCst);
            });
            return Answer::Accepted(Duration::from_millis(300));
        }
        let id = message["id"].clone();
        Answer::Stream(Box::new(move |mut write| {
            Box::pin(async move {
                let mut events = String::new();
                for i in 0..PINGS {
                    events.push_str(&format!(
                        "data: {{\"jsonrpc\":\"2.0\",\"id\":\"ping-{i}\",\"method\":\"ping\"}}\n\n"
                    ));
                }
                let done =
                    json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "done"}]}});
                events.push_str(&format!("data: {done}\n\n"));
                let _ = write.write_all(events.as_bytes()).await;
                tokio::time::sleep(Duration::from_secs(5)).await;
            })
        }))
    })
    .await;
    let client = Client::builder().era(EraChoice::V2026).http(url).await.unwrap();
    let result = tokio::time::timeout(WAIT, client.call_tool("pings", json!({}))).await.expect("no hang").unwrap();
    assert_eq!(result.text(), Some("done"));
    tokio::time::sleep(Duration::from_millis(700)).await;
    let most = most.load(Ordering::SeqCst);
    assert!(most > 0, "the pings were answered");
    assert!(most <= 32, "{most} answers were posted at once");
}

// ---------------------------------------------------------------------------------------------------------------
// HTTPS, headers, transport errors, over the project's own server

/// Says hello.
#[mcp::tool]
fn hello() -> &'static str {
    "hello"
}

fn router() -> axum::Router {
    let server = mcp::Server::builder().tool::<hello>().build().unwrap();
    server.http_router(mcp::HttpOptions::new())
}

fn trusting(pem: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(pem.as_bytes()).unwrap())
        .build()
        .unwrap()
}

#[tokio::test]
async fn https_with_a_trusted_self_signed_certificate_works_in_both_eras() {
    let (port, pem) = tls::serve_tls(router(), &["localhost"]).await;
    for era in [EraChoice::V2026, EraChoice::V2025] {
        let client = Client::builder()
            .era(era)
            .http_client(trusting(&pem))
            .http(format!("https://localhost:{port}/mcp"))
            .await
            .unwrap_or_else(|e| panic!("{era:?}: {e}"));
        let hello = client.call_tool("hello", json!({})).await.unwrap();
        assert_eq!(hello.text(), Some("hello"), "{era:?}");
    }
    // Untrusted, the certificate is a TLS error, told apart from the others.
    let untrusted = Client::builder().http(format!("https://localhost:{port}/mcp")).await.unwrap_err();
    let Error::Transport(e) = &untrusted else { panic!("{untrusted:?}") };
    assert_eq!(e.kind(), TransportErrorKind::Tls, "{e}");
    assert!(std::error::Error::source(e).is_some(), "the source chain is kept");
    assert!(e.to_string().to_lowercase().contains("certificate"), "{e}");
}

#[tokio::test]
async fn transport_errors_say_what_failed() {
    // Nothing listens on a port just freed.
    let port = TcpListener::bind("127.0.0.1:0").await.unwrap().local_addr().unwrap().port();
    let refused = Client::builder().http(format!("http://127.0.0.1:{port}/mcp")).await.unwrap_err();
    assert!(matches!(&refused, Error::Transport(e) if e.kind() == TransportErrorKind::Connect), "{refused:?}");
    let dns = Client::builder().http("http://no-such-host.invalid/mcp").await.unwrap_err();
    assert!(matches!(&dns, Error::Transport(e) if e.kind() == TransportErrorKind::Dns), "{dns:?}");
    let bad = Client::builder().header("bad header", "x").http("http://127.0.0.1:1/mcp").await.unwrap_err();
    assert!(matches!(&bad, Error::Transport(e) if e.kind() == TransportErrorKind::Config), "{bad:?}");
    // A listener that never answers, with the caller's own client and its timeout.
    let silent = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = silent.local_addr().unwrap();
    let http = reqwest::Client::builder().timeout(Duration::from_millis(300)).build().unwrap();
    let timeout = Client::builder().http_client(http).http(format!("http://{addr}/mcp")).await.unwrap_err();
    assert!(matches!(&timeout, Error::Transport(e) if e.kind() == TransportErrorKind::Timeout), "{timeout:?}");
    drop(silent);
}

/// An authorization layer in front of the endpoint: `Authorization: Bearer x`, or 401.
async fn bearer(request: axum::extract::Request, next: axum::middleware::Next) -> axum::response::Response {
    use axum::response::IntoResponse;
    let authorized = request.headers().get("authorization").is_some_and(|v| v == "Bearer x");
    if !authorized {
        return (axum::http::StatusCode::UNAUTHORIZED, "missing or wrong bearer token").into_response();
    }
    next.run(request).await
}

#[tokio::test]
async fn a_header_reaches_the_server_on_every_request_and_a_401_is_readable() {
    let app = router().layer(axum::middleware::from_fn(bearer));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let url = format!("http://{addr}/mcp");

    let refused = Client::builder().http(&url).await.unwrap_err();
    assert_eq!(refused, Error::Http { status: 401, body: "missing or wrong bearer token".into() });
    assert!(refused.to_string().contains("401 Unauthorized: missing or wrong bearer token"), "{refused}");

    for era in [EraChoice::V2026, EraChoice::V2025] {
        // 2025: initialize, the standalone GET, the notifications and the DELETE all carry it.
        let client = Client::builder().era(era).header("Authorization", "Bearer x").http(&url).await.unwrap();
        let hello = client.call_tool("hello", json!({})).await.unwrap();
        assert_eq!(hello.text(), Some("hello"), "{era:?}");
        assert!(client.list_tools().await.unwrap().iter().any(|t| t.name == "hello"));
        client.close().await;
    }
}

/// Waits until it is cancelled.
#[mcp::tool]
async fn forever() -> String {
    std::future::pending::<()>().await;
    unreachable!()
}

/// Closing an HTTP client fails its calls still in flight at once, with `Error::Closed`, in both eras; so does any
/// later call on a clone. (They used to wait out their timeout, or forever without one: closing stopped the
/// readers that would have answered them, and told no one.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_an_http_client_fails_its_calls_in_flight_at_once() {
    let server = mcp::Server::builder().tool::<forever>().build().unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(server.serve_http_on(listener, mcp::HttpOptions::new()));
    for era in [EraChoice::V2025, EraChoice::V2026] {
        let client = Client::builder().era(era).http(url.clone()).await.unwrap();
        let waiting = tokio::spawn({
            let client = client.clone();
            async move { client.call_tool("forever", json!({})).await }
        });
        // The call is on its way (its request sent, or about to be).
        tokio::time::sleep(Duration::from_millis(200)).await;
        let clone = client.clone();
        let started = Instant::now();
        client.close().await;
        let failed = tokio::time::timeout(WAIT, waiting).await.expect("the call ends once its client closes").unwrap();
        assert!(matches!(failed, Err(Error::Closed)), "{era:?}: {failed:?}");
        assert!(started.elapsed() < Duration::from_secs(5), "{era:?}: {:?}", started.elapsed());
        let later = clone.call_tool("forever", json!({})).await;
        assert!(matches!(later, Err(Error::Closed)), "{era:?}: {later:?}");
    }
}

//! The outbound bounds: what waits for a client that does not read is bounded, on every transport and era, and a
//! client that reads everything gets everything, however large one answer is. Each test runs a real socket or a real
//! child process.

use crate::common;

use common::peak_rss_kib;

use std::time::Duration;

use common::v2026;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Serves `server` on a fresh port in this process; returns its address.
async fn serve(server: mcp::Server, options: mcp::HttpOptions) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, server.http_router(options)).await });
    addr
}

/// A connection with a small receive window that sends one 2026 POST and never reads the answer.
async fn post_and_never_read(addr: std::net::SocketAddr, body: &Value) -> tokio::net::TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stream = socket.connect(addr).await.unwrap();
    let text = body.to_string();
    let mut head = format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\n", text.len());
    for (name, value) in common::http::v2026_headers(body) {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(text.as_bytes()).await.unwrap();
    stream
}

/// One 2026 request on a fresh connection, read to its end: the body.
async fn v2026_call(addr: std::net::SocketAddr, id: i64, method: &str, params: Value) -> String {
    let body = v2026::request(id, method, params, json!({}));
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let text = body.to_string();
    let mut head =
        format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n", text.len());
    for (name, value) in common::http::v2026_headers(&body) {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(text.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.unwrap();
    String::from_utf8_lossy(&raw).into_owned()
}

/// A 2026 `subscriptions/listen` listener that stops reading is disconnected when its stream passes the hard bound:
/// the change that tripped the bound returns, later changes return, other clients are served. (The push used to
/// cancel the listener while holding the lock the cancel takes: every list change after it hung, and so did
/// shutdown.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listener_that_stops_reading_is_disconnected_and_list_changes_go_on() {
    /// Says hello.
    #[mcp::tool]
    fn hello() -> &'static str {
        "hello"
    }
    let server = mcp::Server::builder()
        .name("listen")
        .tool::<hello>()
        .outbound_limits(mcp::OutboundLimits::new(2048, 8192))
        .build()
        .unwrap();
    let addr = serve(server.clone(), mcp::HttpOptions::new()).await;
    let watch = json!({"notifications": {"toolsListChanged": true, "resourceSubscriptions": ["file:///big/"]}});
    let listen = v2026::request(1, "subscriptions/listen", watch, json!({}));
    let _stuck = post_and_never_read(addr, &listen).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    // Resource updates of 60 kB fill the socket's buffers and then the stream's hard bound; list changes follow.
    let flood = server.clone();
    let (done, changes) = std::sync::mpsc::channel();
    // A thread of its own: on a deadlock it hangs, and the test still fails.
    std::thread::spawn(move || {
        let uri = format!("file:///big/{}", "x".repeat(60_000));
        for _ in 0..200 {
            flood.notify_resource_updated(&uri);
        }
        for i in 0..1_000 {
            flood.set_tool_enabled("hello", i % 2 == 1);
        }
        let _ = done.send(());
    });
    changes.recv_timeout(Duration::from_secs(60)).expect("list changes hung once the listener was past its hard bound");
    // The server still serves everyone else.
    let answer = tokio::time::timeout(Duration::from_secs(10), v2026_call(addr, 2, "tools/list", json!({})))
        .await
        .expect("tools/list after the flood");
    assert!(answer.contains(r#""name":"hello""#), "{answer}");
}

/// A server whose 2026 listener stopped reading still stops at SIGTERM, within its drain timeout (the stuck
/// connection keeps the drain waiting: here 1 s) and its shutdown deadline.
#[test]
fn a_server_with_a_stuck_listener_still_stops() {
    let server =
        common::http::HttpServer::start_with_env(&["--drain-timeout", "1"], &[("TESTBED_OUTBOUND", "2048,8192")]);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let addr: std::net::SocketAddr = server.authority().parse().unwrap();
    runtime.block_on(async {
        let watch = json!({"notifications": {"resourceSubscriptions": ["file:///big/"]}});
        let stuck = post_and_never_read(addr, &v2026::request(1, "subscriptions/listen", watch, json!({}))).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        // Each touch is a 60 kB notification to the listener: 200 of them are far past its bounds.
        let uri = format!("file:///big/{}", "x".repeat(60_000));
        for id in 0..200 {
            let touch = json!({"name": "touch", "arguments": {"uri": uri}});
            let answer = tokio::time::timeout(Duration::from_secs(10), v2026_call(addr, id + 2, "tools/call", touch))
                .await
                .expect("a resource update hung once the listener was past its hard bound");
            assert!(answer.contains("\"result\""), "{answer}");
        }
        drop(stuck);
    });
    assert!(
        runtime.block_on(server.wait_stderr("a client stopped reading", Duration::from_secs(5))),
        "the listener was never found stuck: {}",
        server.stderr_text()
    );
    let pid = server.pid();
    // SIGTERM: the process exits within its shutdown deadline.
    unsafe_kill(pid);
    let started = std::time::Instant::now();
    while std::path::Path::new(&format!("/proc/{pid}/stat"))
        .exists()
        .then(|| std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default())
        .is_some_and(|s| !s.contains(") Z "))
    {
        assert!(started.elapsed() < Duration::from_secs(10), "the server did not stop at SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn unsafe_kill(pid: u32) {
    let status = std::process::Command::new("kill").arg("-TERM").arg(pid.to_string()).status().unwrap();
    assert!(status.success());
}

/// Everything a handler sends before its first `.await` is bounded on HTTP as on stdio: a tool that logs 200 000
/// lines of 1 KB without yielding (200 MB) costs the server a few MiB, in both eras, and its answer still comes.
/// (The first poll's buffer used to keep all of it: 421 MiB for this call.)
#[tokio::test]
async fn a_flood_before_the_first_await_is_bounded_on_http() {
    let server = common::http::HttpServer::start(&[]);
    let before = peak_rss_kib(server.pid());
    let burst = json!({"name": "log_burst", "arguments": {"count": 200_000, "size": 1000}});
    // 2025: every level is sent before any logging/setLevel.
    let mut client = server.client();
    client.initialize(json!({})).await;
    let (answer, notifications) = client.call(1, "tools/call", burst.clone()).await;
    assert_eq!(answer["result"]["content"][0]["text"], "burst 200000", "{answer}");
    assert!(notifications.len() < 10_000, "{} notifications were kept", notifications.len());
    // 2026: the request asks for every level in its envelope.
    let mut params = burst;
    params["_meta"] = json!({v2026::META_LOG_LEVEL: "debug"});
    let (answer, notifications) = client.v2026_call(2, "tools/call", params).await;
    assert_eq!(answer["result"]["content"][0]["text"], "burst 200000", "{answer}");
    assert!(!notifications.is_empty() && notifications.len() < 10_000, "{} notifications", notifications.len());
    let grown = peak_rss_kib(server.pid()).saturating_sub(before);
    assert!(grown < 48 * 1024, "the server's peak memory grew by {grown} KiB");
}

/// The text of a tool result's first content block.
fn text_len(answer: &Value) -> Option<usize> {
    answer["result"]["content"][0]["text"].as_str().map(str::len)
}

/// One answer larger than the hard bound reaches a client that reads everything, on stdio in both eras, and the
/// session goes on. (It used to be taken for a client that stopped reading: the server exited with no response.)
#[test]
fn a_large_answer_reaches_a_reading_client_on_stdio() {
    let mut server = common::Server::spawn(common::testbed());
    server.initialize();
    let large = json!({"name": "large", "arguments": {"mib": 17}});
    let answer = server.call("tools/call", large.clone());
    assert_eq!(text_len(&answer), Some(17 << 20), "a 17 MiB answer");
    server.send(v2026::request(2026, "tools/call", large, json!({})));
    let answer = server.response(&json!(2026));
    assert_eq!(text_len(&answer), Some(17 << 20), "a 17 MiB answer in the 2026 era");
    let echo = server.call_tool("echo", json!({"text": "still here"}));
    assert_eq!(echo["content"][0]["text"], "still here", "{echo}");
}

/// Two large answers waiting their turn, and small answers behind them, are a client that pauses, not one that
/// stopped reading: when it reads again everything is there. (A large answer waiting behind the frame being written
/// used to count in full: the next small answer found the client stuck and the server exited.)
#[test]
fn large_answers_waiting_their_turn_are_not_a_stuck_client() {
    use std::io::{BufRead, Write};
    let mut child = std::process::Command::new(common::testbed())
        .env("RUST_LOG", "warn")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let init = r#"{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;
    writeln!(stdin, "{init}").unwrap();
    for id in 0..2 {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "large", "arguments": {"mib": 17}}});
        writeln!(stdin, "{call}").unwrap();
    }
    std::thread::sleep(Duration::from_millis(500));
    for id in 2..42 {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "n"}}});
        writeln!(stdin, "{call}").unwrap();
    }
    std::thread::sleep(Duration::from_millis(300));
    // Now the client reads: every answer is there.
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut answered = std::collections::BTreeSet::new();
    let mut line = String::new();
    while answered.len() < 42 {
        line.clear();
        assert!(
            stdout.read_line(&mut line).unwrap() > 0,
            "stdout ended after {} answers: {answered:?}",
            answered.len()
        );
        let message: Value = serde_json::from_str(&line).unwrap();
        if let Some(id) = message["id"].as_i64() {
            assert!(message.get("result").is_some(), "call {id} failed");
            answered.insert(id);
        }
    }
    drop(stdin);
    let _ = child.wait();
}

/// The same over HTTP: a 2025 SSE stream and a 2026 answer stream each deliver an answer larger than the hard bound.
#[tokio::test]
async fn a_large_answer_reaches_a_reading_client_on_http() {
    let server = common::http::HttpServer::start(&[]);
    let mut client = server.client();
    client.initialize(json!({})).await;
    let large = json!({"name": "large", "arguments": {"mib": 17}});
    let (answer, _) = client.call(1, "tools/call", large.clone()).await;
    assert_eq!(text_len(&answer), Some(17 << 20), "a 17 MiB answer on a 2025 SSE stream");
    let mut params = large;
    params["_meta"] = json!({v2026::META_LOG_LEVEL: "info"});
    let (answer, notifications) = client.v2026_call(2, "tools/call", params).await;
    assert_eq!(notifications.len(), 1, "the answer was a stream: {notifications:?}");
    assert_eq!(text_len(&answer), Some(17 << 20), "a 17 MiB answer on a 2026 stream");
}

/// A result over the limit of one frame is answered with an error that names the limit and how to raise it.
#[test]
fn a_result_over_the_frame_limit_is_an_error_that_says_so() {
    let mut command = std::process::Command::new(common::testbed());
    command.env("TESTBED_OUTBOUND", "262144,1048576,1048576");
    let mut server = common::Server::spawn_with(command);
    server.initialize();
    let answer = server.call("tools/call", json!({"name": "large", "arguments": {"mib": 2}}));
    let message = answer["error"]["message"].as_str().unwrap_or_else(|| panic!("an error: {answer}"));
    assert!(message.contains("limit of 1048576 bytes") && message.contains("with_max_frame_bytes"), "{message}");
    let echo = server.call_tool("echo", json!({"text": "still here"}));
    assert_eq!(echo["content"][0]["text"], "still here", "{echo}");
}

/// Input is back-pressured: a stdio client that writes calls and never reads their answers is not read either once
/// more than the soft bound of answers waits, so its requests wait in the pipe (its writes block) instead of in the
/// server, which stays small; when it reads again, every call is answered. (The server used to read and admit up to
/// 10 000 requests in flight, each holding its handler: +55 MiB in 25 s.)
#[test]
fn a_stdio_client_that_does_not_read_its_answers_is_not_read_either() {
    use std::io::{BufRead, Write};
    use std::sync::atomic::{AtomicUsize, Ordering};
    let mut child = std::process::Command::new(common::testbed())
        .env("RUST_LOG", "warn")
        .env("TESTBED_OUTBOUND", "262144,67108864")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();
    let init = r#"{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;
    writeln!(stdin, "{init}").unwrap();
    // The baseline is taken once the server has started and answered (not while it is still loading).
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    assert!(stdout.read_line(&mut line).unwrap() > 0, "no answer to initialize");
    let before = peak_rss_kib(pid);
    // Each answer is about 8 KB: 2 000 of them (16 MB) are far past the soft bound (256 KiB).
    let written = std::sync::Arc::new(AtomicUsize::new(0));
    let counter = written.clone();
    let writer = std::thread::spawn(move || {
        let text = "x".repeat(8000);
        for id in 0..2000 {
            let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": text}}});
            if writeln!(stdin, "{call}").is_err() {
                break;
            }
            counter.store(id + 1, Ordering::SeqCst);
        }
        stdin
    });
    std::thread::sleep(Duration::from_millis(1500));
    let stalled = written.load(Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(written.load(Ordering::SeqCst), stalled, "the client's writes block: the server stopped reading");
    assert!(stalled < 2000, "all {stalled} calls were taken without an answer read");
    let grown = peak_rss_kib(pid).saturating_sub(before);
    assert!(grown < 8 * 1024, "the server grew by {grown} KiB while its client did not read");
    // Now the client reads: every call is answered, and its remaining writes go through.
    let mut answered = 0;
    while answered < 2000 {
        line.clear();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "stdout ended after {answered} answers");
        let message: Value = serde_json::from_str(&line).unwrap();
        assert!(message.get("result").is_some(), "{message}");
        answered += 1;
    }
    drop(writer.join().unwrap());
    let _ = child.wait();
}

/// Opens a 2025 session's standalone GET stream on a connection with a small receive window, and does not read it.
async fn get_and_do_not_read(addr: &str, session: &str) -> tokio::net::TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stream = socket.connect(addr.parse().unwrap()).await.unwrap();
    let head = format!(
        "GET /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\nMcp-Protocol-Version: 2025-11-25\r\n\
         Mcp-Session-Id: {session}\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream
}

/// Reads a raw stream until `needle` was seen `count` times in all (or the stream ends); how many times it was.
async fn count_in_stream(stream: &mut tokio::net::TcpStream, needle: &str, count: usize) -> usize {
    let needle = needle.as_bytes();
    let (mut seen, mut carry, mut buf) = (0, Vec::new(), vec![0u8; 64 * 1024]);
    while seen < count {
        let n = stream.read(&mut buf).await.unwrap_or(0);
        if n == 0 {
            break;
        }
        carry.extend_from_slice(&buf[..n]);
        seen += carry.windows(needle.len()).filter(|w| *w == needle).count();
        let keep = carry.len().min(needle.len() - 1);
        carry.drain(..carry.len() - keep);
    }
    seen
}

/// Input is back-pressured on each 2025 HTTP session too: a client that opens its GET stream, never reads it, and
/// keeps POSTing calls that notify on it is not admitted more calls once more than the soft bound waits unread for
/// the session; each later call waits, then gets 503 with `Retry-After` and an error that names the limit, and the
/// server stays small. A reading client in another session is served meanwhile, and once the first one reads its
/// stream again, its calls are admitted and everything it was owed arrives. (Calls used to be admitted however
/// much waited, up to the stream's hard bound: about 60 MB for these 1 000 calls.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2025_session_that_does_not_read_its_stream_gets_no_new_calls_until_it_reads() {
    let server = common::http::HttpServer::start_with_env(&[], &[("TESTBED_OUTBOUND", "262144,67108864")]);
    let started = std::time::Instant::now();
    let mut client = server.client();
    client.initialize(json!({})).await;
    // Each touch of this resource is a 60 kB notification on the session's GET stream.
    let uri = format!("file:///big/{}", "x".repeat(60_000));
    let (subscribed, _) = client.call(1, "resources/subscribe", json!({"uri": uri})).await;
    assert_eq!(subscribed["result"], json!({}), "{subscribed}");
    let session = client.session.clone().expect("a session id");
    let mut stream = get_and_do_not_read(server.authority(), &session).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = peak_rss_kib(server.pid());
    let touch = json!({"name": "touch", "arguments": {"uri": uri}});
    let call = {
        let client = client.clone();
        move |id: i64| {
            let client = client.clone();
            let body = common::http::request(id, "tools/call", touch.clone());
            async move { tokio::time::timeout(Duration::from_secs(60), client.send(&body)).await.expect("a POST hung") }
        }
    };
    // 1 000 calls would queue 60 MB of notifications: far past the soft bound (256 KiB).
    let mut admitted = 0;
    let mut refused = None;
    for id in 2..1002 {
        let response = call(id).await;
        if response.status() == 503 {
            refused = Some(response);
            break;
        }
        assert_eq!(response.status(), 200);
        let answer = common::http::Body::of(response).await.response(&json!(id), "tools/call").await;
        assert!(answer.get("result").is_some(), "{answer}");
        admitted += 1;
    }
    let grown = peak_rss_kib(server.pid()).saturating_sub(before);
    let refused = refused.unwrap_or_else(|| {
        panic!("all {admitted} calls were admitted while their notifications waited unread (the server grew by {grown} KiB)")
    });
    assert!(admitted > 0, "the first call was refused, with nothing waiting yet");
    assert!(refused.headers().get("retry-after").is_some(), "503 without Retry-After");
    let body: Value = serde_json::from_str(&refused.text().await.unwrap()).unwrap();
    assert_eq!(body["error"]["code"], -31000, "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("262144") && message.contains("ServerBuilder::outbound_limits"), "{message}");
    assert!(grown < 16 * 1024, "the server grew by {grown} KiB while its client did not read");
    // Later calls are refused too (two at once: each waits, then gets 503), while a reading client in another
    // session is served.
    let mut other = server.client();
    other.initialize(json!({})).await;
    let (later, also, served) = tokio::join!(call(5000), call(5001), async {
        other.call(2, "tools/call", json!({"name": "echo", "arguments": {"text": "served"}})).await.0
    });
    assert_eq!((later.status().as_u16(), also.status().as_u16()), (503, 503));
    assert_eq!(served["result"]["content"][0]["text"], "served", "{served}");
    // What frees work is admitted however much waits: a cancel, and an answer to a request of the server's.
    let cancel = common::http::notification("notifications/cancelled", json!({"requestId": 999}));
    assert_eq!(client.send(&cancel).await.status(), 202, "a cancel while the session is backed up");
    let answer = json!({"jsonrpc": "2.0", "id": 999, "result": {}});
    assert_eq!(client.send(&answer).await.status(), 202, "an answer while the session is backed up");
    // A call sent now waits; the client reads its stream again: the call is admitted (or, retried after
    // Retry-After, soon is), and every notification it was owed arrives, none lost.
    let pending = tokio::spawn({
        let call = call.clone();
        async move {
            for attempt in 0..20 {
                let response = call(6000 + attempt).await;
                if response.status() != 503 {
                    return (6000 + attempt, response);
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            panic!("calls were still refused after the client read its stream");
        }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let needle = "notifications/resources/updated";
    let owed = admitted + 1;
    let seen = tokio::time::timeout(Duration::from_secs(60), count_in_stream(&mut stream, needle, owed))
        .await
        .expect("the stream's notifications hung");
    let (id, response) = tokio::time::timeout(Duration::from_secs(60), pending).await.expect("the call hung").unwrap();
    assert_eq!(response.status(), 200, "once the stream was read");
    let answer = common::http::Body::of(response).await.response(&json!(id), "tools/call").await;
    assert!(answer.get("result").is_some(), "{answer}");
    assert_eq!(seen, owed, "notifications on the stream, after {:?}", started.elapsed());
}

/// A session whose client gives up its unread stream (closes the connection) is not held back for it: what waited
/// there went with the connection, and the session's calls are admitted again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2025_session_that_closes_its_unread_stream_gets_calls_again() {
    let server = common::http::HttpServer::start_with_env(&[], &[("TESTBED_OUTBOUND", "262144,67108864")]);
    let mut client = server.client();
    client.initialize(json!({})).await;
    let uri = format!("file:///big/{}", "x".repeat(60_000));
    client.call(1, "resources/subscribe", json!({"uri": uri})).await;
    let stream = get_and_do_not_read(server.authority(), client.session.as_deref().unwrap()).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let touch = common::http::request(0, "tools/call", json!({"name": "touch", "arguments": {"uri": uri}}));
    let send = || tokio::time::timeout(Duration::from_secs(60), client.send(&touch));
    let mut refused = false;
    for _ in 0..1000 {
        let response = send().await.expect("a POST hung");
        if response.status() == 503 {
            refused = true;
            break;
        }
        assert_eq!(response.status(), 200);
        let _ = response.bytes().await;
    }
    assert!(refused, "calls were admitted while their notifications waited unread");
    drop(stream);
    // The server sees the connection gone at its next write: a call retried after Retry-After is admitted.
    for attempt in 0.. {
        let response = send().await.expect("a POST hung");
        if response.status() == 200 {
            break;
        }
        assert!(attempt < 20, "calls were still refused after the client closed its unread stream");
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

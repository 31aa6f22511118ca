//! Limits: what a client that sends too much, reads too slowly or holds too much costs the server, and the clear
//! error it gets at each bound (the body size, in-flight requests and sessions, the event store, slow and idle
//! connections, a stdio client that stops reading, stateless mode's memory per request), on a real binary or a real
//! socket.

use crate::common;

use common::cases::{Cancel, Era, Peer, Transport};
use common::rss_kib;

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use common::http::{request, HttpServer};
use common::testbed;
use serde_json::{json, Value};

/// A declared body over the limit is refused at once: no `100 Continue`, no reading the upload.
#[test]
fn a_declared_length_over_the_limit_is_413_before_the_body_is_sent() {
    let server = HttpServer::start(&[]);
    let authority = server.url.trim_start_matches("http://").split('/').next().unwrap().to_owned();
    let mut tcp = std::net::TcpStream::connect(&authority).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nExpect: 100-continue\r\nContent-Length: 100000000\r\n\r\n"
    );
    tcp.write_all(head.as_bytes()).unwrap();
    let mut answer = [0u8; 512];
    let n = tcp.read(&mut answer).expect("an answer without the body being sent");
    let answer = String::from_utf8_lossy(&answer[..n]);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
}

/// A client that sends a body over the limit without `Expect` reads the 413. The server reads
/// the rest of the body and throws it away (a lingering close) rather than close with the upload unread, which
/// resets the connection: the client's writes failed and its read of the answer with them.
#[test]
fn a_body_over_the_limit_sent_without_expect_gets_its_413_not_a_reset() {
    let server = HttpServer::start(&[]);
    let authority = server.url.trim_start_matches("http://").split('/').next().unwrap().to_owned();
    for attempt in 0..3 {
        let mut tcp = std::net::TcpStream::connect(&authority).unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        tcp.set_write_timeout(Some(Duration::from_secs(10))).unwrap();
        let length = 64 << 20;
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {length}\r\n\r\n"
        );
        tcp.write_all(head.as_bytes()).unwrap();
        let chunk = vec![b' '; 1 << 20];
        for sent in 0..length / chunk.len() {
            if let Err(e) = tcp.write_all(&chunk) {
                panic!("attempt {attempt}: the upload failed after {sent} MiB of 64: {e}");
            }
        }
        let mut answer = Vec::new();
        let mut buffer = [0u8; 4096];
        while !answer.windows(4).any(|w| w == b"\r\n\r\n") {
            match tcp.read(&mut buffer) {
                Ok(0) => break,
                Ok(n) => answer.extend_from_slice(&buffer[..n]),
                Err(e) => panic!("attempt {attempt}: reading the answer failed: {e}"),
            }
        }
        let answer = String::from_utf8_lossy(&answer);
        assert!(answer.starts_with("HTTP/1.1 413"), "attempt {attempt}: {answer}");
    }
}

/// Stateless SSE mode forgets each request once it is answered (it used to keep an entry per request
/// forever, about 380 bytes each).
#[tokio::test]
async fn stateless_sse_mode_keeps_nothing_per_answered_request() {
    let server = HttpServer::start(&["--stateless"]);
    let client = server.client();
    let burst = |from: i64, count: i64| {
        let client = common::http::Client { http: client.http.clone(), url: client.url.clone(), session: None };
        async move {
            for id in from..from + count {
                let body = request(id, "tools/call", json!({"name": "echo", "arguments": {"text": "x"}}));
                let text = client.send(&body).await.text().await.unwrap();
                assert!(text.contains("\"result\""), "{text}");
            }
        }
    };
    // Warm up the allocator and the connection pool, then measure a burst of distinct ids.
    burst(0, 2_000).await;
    let before = rss_kib(server.pid());
    let bursts: Vec<_> = (0..4).map(|i| tokio::spawn(burst(10_000 + i * 5_000, 5_000))).collect();
    for b in bursts {
        b.await.unwrap();
    }
    let after = rss_kib(server.pid());
    // 20 000 leaked entries would be about 7.5 MiB.
    assert!(after < before + 3 * 1024, "resident memory grew from {before} KiB to {after} KiB over 20 000 requests");
}

/// Serves `server` on a fresh port with `options`, in this process; returns the endpoint's URL.
async fn serve_in_process(server: mcp::Server, options: mcp::HttpOptions) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, server.http_router(options)).await });
    format!("http://{addr}/mcp")
}

/// The event store is bounded by bytes, per session and across sessions; a `Last-Event-ID` whose events
/// are gone gets a 400 that says so (it used to attach silently, skipping what was lost).
#[tokio::test]
async fn the_event_store_is_bounded_by_bytes_and_says_when_a_resume_point_is_gone() {
    /// A large answer.
    #[mcp::tool]
    fn big() -> String {
        "x".repeat(100_000)
    }
    let server = mcp::Server::builder().name("big").tool::<big>().build().unwrap();
    let store = std::sync::Arc::new(mcp::store::MemoryEventStoreFactory::new(1_000, 1 << 20, 2 << 20));
    let url = serve_in_process(server, mcp::HttpOptions::new().event_store(store.clone())).await;
    let mut client = common::http::Client { http: reqwest::Client::new(), url, session: None };
    client.initialize(json!({})).await;
    let first = client.send(&request(1, "tools/call", json!({"name": "big", "arguments": {}}))).await;
    let mut body = common::http::Body::of(first).await;
    let first_id = body.next_event(Duration::from_secs(5)).await.expect("the priming event").id.expect("an id");
    for id in 2..40 {
        let (answer, _) = client.call(id, "tools/call", json!({"name": "big", "arguments": {}})).await;
        assert_eq!(answer["result"]["content"][0]["text"].as_str().map(str::len), Some(100_000));
    }
    // 39 answers of 100 kB were sent; the session keeps at most 1 MiB of them.
    assert!(store.total_bytes() <= 1 << 20, "kept {} bytes", store.total_bytes());
    let resumed = client.get(Some(&first_id)).await;
    assert_eq!(resumed.status(), 400, "the events after {first_id} are gone");
    let text = resumed.text().await.unwrap();
    assert!(text.contains("Last-Event-ID"), "{text}");
}

/// Limits with generous defaults: requests in flight on one connection, and sessions at once.
#[tokio::test]
async fn in_flight_requests_and_sessions_are_limited_with_a_clear_error() {
    // The requests in flight on one connection (stdio serves both eras on one; a 2025 HTTP session is one), from one
    // table of cases.
    const CASES: &[(Transport, Era)] =
        &[(Transport::Stdio, Era::V2025), (Transport::Stdio, Era::V2026), (Transport::HttpSse, Era::V2025)];
    for &(transport, era) in CASES {
        let case = format!("{transport:?} {era:?}");
        let mut peer = Peer::open_with_env(transport, era, &[("TESTBED_MAX_IN_FLIGHT", "3")]).await;
        let ids: Vec<Value> = (0..3).map(|i| json!(format!("held-{i}"))).collect();
        for id in &ids {
            peer.start(id, "sleep", json!({"ms": 20_000}));
            assert!(peer.wait_stderr(&format!("SLEEP_START {id}")).await, "{case}: {}", peer.stderr_text());
        }
        let (refused, _) = peer.call(&json!("over"), "echo", json!({"text": "one too many"}), json!({})).await;
        assert_eq!(refused["error"]["code"], -31000, "{case}: {refused}");
        assert!(refused["error"]["message"].as_str().unwrap().contains("in flight"), "{case}: {refused}");
        peer.cancel(&ids[0], Cancel::Notification).await;
        assert!(peer.wait_stderr(&format!("SLEEP_ABORTED {}", ids[0])).await, "{case}: {}", peer.stderr_text());
        let (echoed, _) = peer.call(&json!("room"), "echo", json!({"text": "room again"}), json!({})).await;
        assert!(echoed["result"].is_object(), "{case}: {echoed}");
    }

    // Sessions at the cap that are busy (here each has its GET stream open) refuse a new one; idle ones would make
    // room instead (tests/it/caps.rs).
    let server = mcp::Server::builder().name("few").build().unwrap();
    let url = serve_in_process(server, mcp::HttpOptions::new().max_sessions(2)).await;
    let mut streams = Vec::new();
    for _ in 0..2 {
        let mut client = common::http::Client { http: reqwest::Client::new(), url: url.clone(), session: None };
        client.initialize(json!({})).await;
        let stream = client.get(None).await;
        assert_eq!(stream.status(), 200);
        streams.push(stream);
    }
    let third = common::http::Client { http: reqwest::Client::new(), url, session: None };
    let init = request(
        0,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "0"}}),
    );
    let refused = third.send(&init).await;
    assert_eq!(refused.status(), 503);
    assert_eq!(refused.headers().get("retry-after").and_then(|v| v.to_str().ok()), Some("1"));
    drop(streams);
}

/// Reads from a raw connection until it closes or `within` passes; returns what came and whether it closed.
fn read_until_closed(tcp: &mut std::net::TcpStream, within: Duration) -> (String, bool) {
    tcp.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
    let deadline = Instant::now() + within;
    let mut seen = Vec::new();
    let mut buf = [0u8; 1024];
    while Instant::now() < deadline {
        match tcp.read(&mut buf) {
            Ok(0) => return (String::from_utf8_lossy(&seen).into_owned(), true),
            Ok(n) => seen.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(_) => return (String::from_utf8_lossy(&seen).into_owned(), true),
        }
    }
    (String::from_utf8_lossy(&seen).into_owned(), false)
}

/// Connections are timed out (idle, dripped headers, a body that never comes) and limited in number.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_and_idle_connections_are_timed_out_and_connections_are_limited() {
    let server = mcp::Server::builder().name("timeouts").build().unwrap();
    let options = mcp::HttpOptions::new()
        .header_read_timeout(Duration::from_millis(800))
        .body_read_timeout(Duration::from_millis(800))
        .max_connections(3);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(server.serve_http_on(listener, options));

    tokio::task::spawn_blocking(move || {
        // An idle connection is closed.
        let mut idle = std::net::TcpStream::connect(addr).unwrap();
        let (_, closed) = read_until_closed(&mut idle, Duration::from_secs(5));
        assert!(closed, "an idle connection stays open");

        // Headers dripped a byte at a time never finish: the connection is closed.
        let mut drip = std::net::TcpStream::connect(addr).unwrap();
        let started = Instant::now();
        let mut closed = false;
        for byte in b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ".iter().cycle() {
            if started.elapsed() > Duration::from_secs(5) {
                break;
            }
            if drip.write_all(&[*byte]).is_err() {
                closed = true; // the server closed it (its reset makes writes fail)
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(closed, "dripped headers kept the connection open for 5 s");

        // Headers, then no body: 408.
        let mut no_body = std::net::TcpStream::connect(addr).unwrap();
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{{"
        );
        no_body.write_all(head.as_bytes()).unwrap();
        let (answer, _) = read_until_closed(&mut no_body, Duration::from_secs(5));
        assert!(answer.starts_with("HTTP/1.1 408"), "{answer:?}");

        // Three connections are the limit, but idle ones do not keep a fourth out: the one idle longest makes
        // room, and the fourth is served (busy ones still refuse it: tests/it/caps.rs).
        let held: Vec<_> = (0..3).map(|_| std::net::TcpStream::connect(addr).unwrap()).collect();
        std::thread::sleep(Duration::from_millis(100));
        let mut fourth = std::net::TcpStream::connect(addr).unwrap();
        let get = format!(
            "GET /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\
             MCP-Protocol-Version: 2025-11-25\r\nConnection: close\r\n\r\n"
        );
        fourth.write_all(get.as_bytes()).unwrap();
        let (answer, _) = read_until_closed(&mut fourth, Duration::from_secs(5));
        assert!(answer.starts_with("HTTP/1.1 400"), "{answer:?}");
        drop(held);
    })
    .await
    .unwrap();
}

/// Over stdio, a client that stops reading does not grow the server's memory. Logs past the soft bound are
/// dropped; the response still comes once the client reads again.
#[test]
fn a_stdio_client_that_stops_reading_costs_bounded_memory() {
    use std::io::BufRead;
    let mut child = std::process::Command::new(testbed())
        .env("RUST_LOG", "warn")
        .env("TESTBED_OUTBOUND", "262144,1048576")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;
    writeln!(stdin, "{init}").unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let before = rss_kib(pid);
    // 50 MB of logs, and nobody reads stdout.
    let flood = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"log_flood","arguments":{"count":50000,"size":1000}}}"#;
    writeln!(stdin, "{flood}").unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let done = rx.iter().take_while(|l| !l.contains("FLOOD_DONE")).count();
    let grown = rss_kib(pid).saturating_sub(before);
    assert!(grown < 16 * 1024, "the server grew by {grown} KiB while its client did not read ({done} lines)");
    // The client reads again: the response is there.
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    let answer = loop {
        line.clear();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "stdout ended before the response");
        let message: Value = serde_json::from_str(&line).unwrap();
        if message["id"] == 1 {
            break message;
        }
    };
    assert_eq!(answer["result"]["content"][0]["text"], "logged 50000", "{answer}");
    drop(stdin);
    let _ = child.wait();
}

/// Over stdio, a client that stays stuck past the hard bound is disconnected: its session ends and the server
/// exits, as at the end of input. Its input is not read once more than the soft bound waits (see
/// `outbound_limits.rs`), so what passes the hard bound is what a request already read sends: here 8 000 list
/// changes, which cannot be dropped.
#[test]
fn a_stdio_client_stuck_past_the_hard_bound_is_disconnected() {
    let mut child = std::process::Command::new(testbed())
        .env("RUST_LOG", "warn")
        .env("TESTBED_OUTBOUND", "65536,262144")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let init = r#"{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;
    writeln!(stdin, "{init}").unwrap();
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "flip_echo", "arguments": {"times": 8000}}});
    writeln!(stdin, "{call}").unwrap();
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "{status:?}");
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "the stuck client's session did not end");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Over HTTP, a client that holds a request's SSE stream without reading it does not grow the server's memory.
#[tokio::test]
async fn an_http_client_that_stops_reading_costs_bounded_memory() {
    let server = HttpServer::start_with_env(&[], &[("TESTBED_OUTBOUND", "262144,4194304")]);
    let mut client = server.client();
    client.initialize(json!({})).await;
    let before = rss_kib(server.pid());
    let flood = request(1, "tools/call", json!({"name": "log_flood", "arguments": {"count": 50000, "size": 1000}}));
    let response = client.send(&flood).await; // the headers came; the body is never read
    assert_eq!(response.status(), 200);
    assert!(server.wait_stderr("FLOOD_DONE", Duration::from_secs(30)).await, "{}", server.stderr_text());
    let grown = rss_kib(server.pid()).saturating_sub(before);
    assert!(grown < 24 * 1024, "the server grew by {grown} KiB while its client did not read");
    drop(response);
}

/// `ServerBuilder::max_message_bytes` is the limit of every transport: over HTTP a body past it gets 413, unless the
/// endpoint sets its own with `HttpOptions::max_body_bytes`.
#[tokio::test]
async fn max_message_bytes_limits_http_bodies_too() {
    /// Echoes.
    #[mcp::tool]
    fn echo(text: String) -> String {
        text
    }
    let post = async |url: &str, text: &str| {
        let mut client = common::http::Client { http: reqwest::Client::new(), url: url.to_owned(), session: None };
        client.initialize(json!({})).await;
        let call = request(2, "tools/call", json!({"name": "echo", "arguments": {"text": text}}));
        client.send(&call).await.status().as_u16()
    };
    let small = || mcp::Server::builder().tool::<echo>().max_message_bytes(1024).build().unwrap();
    let url = serve_in_process(small(), mcp::HttpOptions::new()).await;
    assert_eq!(post(&url, "short").await, 200);
    assert_eq!(post(&url, &"x".repeat(2048)).await, 413, "a body over the server's max_message_bytes");
    let url = serve_in_process(small(), mcp::HttpOptions::new().max_body_bytes(8192)).await;
    assert_eq!(post(&url, &"x".repeat(2048)).await, 200, "the endpoint's own limit goes over the server's");
}

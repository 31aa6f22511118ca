//! The connection and session caps of Streamable HTTP: they were global lockouts (idle sockets at the
//! cap refused every new client until they timed out; idle sessions at the cap refused every new `initialize` until
//! they expired). At the cap the connection or session idle longest makes room, taken first from the peer address
//! that holds the most; only when every one is busy is the newcomer refused, as before. A server in this process
//! with small caps, over real TCP; nothing is timed.

use crate::common;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use common::http::{request, Body, Client};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long any one read may take before the test gives up (a bound on failure, not a speed being measured).
const PATIENCE: Duration = Duration::from_secs(20);

/// Holds its request open (its response never comes while the test runs).
#[mcp::tool]
async fn hold() -> String {
    tokio::time::sleep(Duration::from_secs(600)).await;
    "held".into()
}

/// Runs as a task that holds on (its creating request is answered at once).
#[mcp::tool(task = "optional")]
async fn hold_task() -> String {
    tokio::time::sleep(Duration::from_secs(600)).await;
    "held".into()
}

fn server() -> mcp::Server {
    mcp::Server::builder().name("caps").tool::<hold>().tool::<hold_task>().build().unwrap()
}

/// Serves `options` with `serve_http_on` (which knows each client's address) on a free loopback port.
async fn serve(options: mcp::HttpOptions) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(server().serve_http_on(listener, options));
    addr
}

/// A connection to `addr` from the loopback address `127.0.0.<from>`.
async fn connect(addr: SocketAddr, from: u8) -> TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(SocketAddr::from(([127, 0, 0, from], 0))).unwrap();
    socket.connect(addr).await.unwrap()
}

/// A POST of `body` as a 2025 client sends it, keeping the connection alive.
fn post(addr: SocketAddr, body: &Value) -> Vec<u8> {
    let body = body.to_string();
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Lets the server mark a connection idle before the next one is used, so that "idle longest" is the order the test
/// used them in: the server marks it when the response's body is dropped, which can come after the client has read
/// the whole response (under load, after the next connection's response, seen once in a CI dry run).
async fn settle() {
    tokio::time::sleep(Duration::from_millis(100)).await;
}

/// Reads one byte; `None` at the end of the stream (or a reset).
async fn byte(tcp: &mut TcpStream) -> Option<u8> {
    let mut one = [0u8; 1];
    match tokio::time::timeout(PATIENCE, tcp.read(&mut one)).await.expect("the server answers or closes") {
        Ok(1) => Some(one[0]),
        _ => None,
    }
}

/// Reads a line (without its CRLF); `None` if the connection ends first.
async fn line(tcp: &mut TcpStream) -> Option<String> {
    let mut line = Vec::new();
    loop {
        match byte(tcp).await? {
            b'\n' => return Some(String::from_utf8_lossy(line.strip_suffix(b"\r").unwrap_or(&line)).into_owned()),
            b => line.push(b),
        }
    }
}

/// A response's status line and headers (names lowercased); `None` if the connection ends first.
async fn head(tcp: &mut TcpStream) -> Option<(String, Vec<(String, String)>)> {
    let status = line(tcp).await?;
    let mut headers = Vec::new();
    loop {
        let line = line(tcp).await?;
        if line.is_empty() {
            return Some((status, headers));
        }
        let (name, value) = line.split_once(':').expect("a header");
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
}

/// A whole response: its status line, headers and body (by `Content-Length` or chunked), leaving the connection
/// idle; `None` if the connection ends first.
async fn response(tcp: &mut TcpStream) -> Option<(String, Vec<(String, String)>, String)> {
    let (status, headers) = head(tcp).await?;
    let mut body = Vec::new();
    if header(&headers, "transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        loop {
            let size = usize::from_str_radix(line(tcp).await?.trim(), 16).expect("a chunk size");
            for _ in 0..size {
                body.push(byte(tcp).await?);
            }
            line(tcp).await?;
            if size == 0 {
                break;
            }
        }
    } else {
        let length: usize = header(&headers, "content-length").map_or(0, |v| v.parse().unwrap());
        for _ in 0..length {
            body.push(byte(tcp).await?);
        }
    }
    Some((status, headers, String::from_utf8_lossy(&body).into_owned()))
}

/// A ping on the connection, answered whole: the connection is idle again after it.
async fn ping(tcp: &mut TcpStream, addr: SocketAddr) -> Option<String> {
    tcp.write_all(&post(addr, &request(1, "ping", json!({})))).await.ok()?;
    let (status, _, body) = response(tcp).await?;
    assert!(status.starts_with("HTTP/1.1 200"), "{status} {body}");
    Some(body)
}

/// Whether the server closed the connection (reads reach its end, or it was reset).
async fn closed(tcp: &mut TcpStream) -> bool {
    byte(tcp).await.is_none()
}

/// Waits for the server to close `connections[expected]`; if it does not, fails naming the connections it closed
/// instead (each is looked at briefly), so that a failure says which one the server chose.
async fn closes(connections: &mut [TcpStream], expected: usize, what: &str) {
    let mut one = [0u8; 1];
    match tokio::time::timeout(PATIENCE, connections[expected].read(&mut one)).await {
        Ok(Ok(0) | Err(_)) => return,
        Ok(Ok(_)) => panic!("{what}: the connection sent a byte instead of closing"),
        Err(_) => {}
    }
    let mut closed_instead = Vec::new();
    for (i, tcp) in connections.iter_mut().enumerate() {
        if let Ok(Ok(0) | Err(_)) = tokio::time::timeout(Duration::from_millis(200), tcp.read(&mut one)).await {
            closed_instead.push(i);
        }
    }
    panic!("{what}: connection {expected} was not closed within {PATIENCE:?}; closed instead: {closed_instead:?}");
}

/// Idle keep-alive connections at the cap do not keep a new client out: the one idle longest is closed, and the
/// newcomer is served. (Before, the newcomer got 503 until an idle one timed out, 30 s by default.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_at_the_cap_make_room_for_a_new_client_oldest_first() {
    let addr = serve(mcp::HttpOptions::new().stateless(true).max_connections(3)).await;
    let mut idle = Vec::new();
    for _ in 0..3 {
        let mut tcp = connect(addr, 1).await;
        ping(&mut tcp, addr).await.expect("served");
        settle().await;
        idle.push(tcp);
    }
    // A fourth client is served, not refused.
    let mut newcomer = connect(addr, 1).await;
    let answer = ping(&mut newcomer, addr).await.expect("the newcomer is served, not refused");
    assert!(answer.contains(r#""result""#), "{answer}");
    // The oldest idle connection made room; the other two still serve.
    closes(&mut idle, 0, "the connection idle longest is closed").await;
    for tcp in &mut idle[1..] {
        ping(tcp, addr).await.expect("a younger idle connection still serves");
    }

    // A connection that has not sent a request yet is idle too.
    drop(idle);
    drop(newcomer);
    let addr = serve(mcp::HttpOptions::new().stateless(true).max_connections(2)).await;
    let silent = connect(addr, 1).await;
    // (The server records a connection when the task serving it first runs: let it, before the next comes.)
    settle().await;
    let mut used = connect(addr, 1).await;
    ping(&mut used, addr).await.expect("served");
    settle().await;
    let mut newcomer = connect(addr, 1).await;
    ping(&mut newcomer, addr).await.expect("the newcomer is served, not refused");
    closes(&mut [silent, used], 0, "the silent connection, idle longest, is closed").await;
}

/// At the connection cap the peer address holding the most connections gives one up first, even when another
/// address's connection has been idle longer.
// Clients bound to 127.0.0.2 and .3: all of 127/8 is loopback on Linux (macOS configures only 127.0.0.1).
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_address_holding_the_most_connections_gives_one_up_first() {
    let addr = serve(mcp::HttpOptions::new().stateless(true).max_connections(3)).await;
    // 127.0.0.1 first (idle longest), then two of 127.0.0.2.
    let mut lone = connect(addr, 1).await;
    ping(&mut lone, addr).await.expect("served");
    settle().await;
    let mut many = Vec::new();
    for _ in 0..2 {
        let mut tcp = connect(addr, 2).await;
        ping(&mut tcp, addr).await.expect("served");
        settle().await;
        many.push(tcp);
    }
    let mut newcomer = connect(addr, 3).await;
    ping(&mut newcomer, addr).await.expect("the newcomer is served, not refused");
    assert!(closed(&mut many[0]).await, "the older connection of the address holding two was closed");
    ping(&mut lone, addr).await.expect("the lone address's connection, though idle longest, was kept");
    ping(&mut many[1], addr).await.expect("the other connection of that address was kept");
}

/// Starts a call that holds its request open on `tcp`, and reads the head of its stream: the connection is busy.
async fn hold_on(tcp: &mut TcpStream, addr: SocketAddr) {
    tcp.write_all(&post(addr, &request(1, "tools/call", json!({"name": "hold", "arguments": {}})))).await.unwrap();
    let (status, _) = head(tcp).await.expect("the stream starts");
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
}

/// Busy connections (a request in progress on each) are not closed to make room: with one busy and one idle at
/// the cap, the idle one makes room; when every connection is busy, the newcomer is refused as before: 503 with
/// `Retry-After: 1`, and its connection closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn busy_connections_at_the_cap_still_refuse_a_new_client() {
    let addr = serve(mcp::HttpOptions::new().stateless(true).max_connections(2)).await;
    // Busy first, so that it is also the connection opened longest ago.
    let mut busy = connect(addr, 1).await;
    hold_on(&mut busy, addr).await;
    let mut idle = connect(addr, 1).await;
    ping(&mut idle, addr).await.expect("served");
    let mut newcomer = connect(addr, 1).await;
    ping(&mut newcomer, addr).await.expect("the newcomer is served in the idle connection's place");
    assert!(closed(&mut idle).await, "the idle connection made room");

    // Now both are busy.
    hold_on(&mut newcomer, addr).await;
    // (Nothing is sent: a refused connection is answered at once, unread, and a request left unread in it could
    // turn its close into a reset.)
    let mut refused = connect(addr, 1).await;
    let (status, headers, _) = response(&mut refused).await.expect("an answer");
    assert!(status.starts_with("HTTP/1.1 503"), "{status}");
    assert_eq!(header(&headers, "retry-after"), Some("1"));
    assert!(closed(&mut refused).await, "the refused connection is closed");
    drop((busy, newcomer));
}

/// A 2025 client from the loopback address `127.0.0.<from>`.
fn client(addr: SocketAddr, from: u8) -> Client {
    let http = reqwest::Client::builder().local_address(IpAddr::V4(Ipv4Addr::new(127, 0, 0, from))).build().unwrap();
    Client { http, url: format!("http://{addr}/mcp"), session: None }
}

async fn ping_status(client: &Client) -> u16 {
    client.send(&request(7, "ping", json!({}))).await.status().as_u16()
}

fn initialize() -> Value {
    request(
        0,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "0"}}),
    )
}

/// Idle sessions at the cap do not keep a new `initialize` out: the session idle longest is ended, as idle expiry
/// ends one, and its id then gets 404. (Before, every new `initialize` got 503 until one expired, 30 min by
/// default.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_sessions_at_the_cap_make_room_for_a_new_initialize_oldest_first() {
    let addr = serve(mcp::HttpOptions::new().max_sessions(2)).await;
    let mut old = Vec::new();
    for _ in 0..2 {
        let mut c = client(addr, 1);
        c.initialize(json!({})).await;
        old.push(c);
    }
    // The older session is used last: idle longest is by last use, not by age.
    assert_eq!(ping_status(&old[0]).await, 200);
    let mut newcomer = client(addr, 1);
    newcomer.initialize(json!({})).await; // 200 with a session id, or it panics
    assert_eq!(ping_status(&newcomer).await, 200);
    assert_eq!(ping_status(&old[1]).await, 404, "the session idle longest was ended");
    let gone = old[1].send(&request(8, "ping", json!({}))).await;
    let error: Value = serde_json::from_str(&gone.text().await.unwrap()).unwrap();
    assert!(error["error"]["message"].as_str().unwrap().contains("session not found"), "{error}");
    assert_eq!(ping_status(&old[0]).await, 200, "the session used since was kept");
}

/// Sessions with work in flight, an open stream or a task running are not ended to make room: when every session
/// at the cap is busy, a new `initialize` is refused as before (503, `Retry-After: 1`, error -31000).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn busy_sessions_at_the_cap_still_refuse_a_new_initialize() {
    let addr = serve(mcp::HttpOptions::new().max_sessions(3)).await;
    let mut streaming = client(addr, 1);
    streaming.initialize(json!({})).await;
    let stream = streaming.get(None).await;
    assert_eq!(stream.status(), 200);
    let mut calling = client(addr, 1);
    calling.initialize(json!({})).await;
    let call = calling.send(&request(1, "tools/call", json!({"name": "hold", "arguments": {}}))).await;
    assert_eq!(call.status(), 200);
    let mut call = Body::of(call).await;
    call.next_event(PATIENCE).await.expect("the call's stream is open");
    // A task outlives the request that created it: nothing is in flight on this session, but a task runs.
    let mut tasking = client(addr, 1);
    tasking.initialize(json!({})).await;
    let (created, _) = tasking.call(2, "tools/call", json!({"name": "hold_task", "arguments": {}, "task": {}})).await;
    assert_eq!(created["result"]["task"]["status"], "working", "{created}");

    let refused = client(addr, 1).send(&initialize()).await;
    assert_eq!(refused.status(), 503);
    assert_eq!(refused.headers().get("retry-after").and_then(|v| v.to_str().ok()), Some("1"));
    let error: Value = serde_json::from_str(&refused.text().await.unwrap()).unwrap();
    assert_eq!(error["error"]["code"], -31000, "{error}");
    assert!(error["error"]["message"].as_str().unwrap().contains("most sessions"), "{error}");
    // Neither busy session was touched.
    assert_eq!(ping_status(&streaming).await, 200);
    assert_eq!(ping_status(&calling).await, 200);
    assert_eq!(ping_status(&tasking).await, 200);
    drop(stream);
}

/// At the session cap the address holding the most sessions gives one up first, even when another address's
/// session has been idle longer.
// Clients bound to 127.0.0.2 and .3: all of 127/8 is loopback on Linux (macOS configures only 127.0.0.1).
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_address_holding_the_most_sessions_gives_one_up_first() {
    let addr = serve(mcp::HttpOptions::new().max_sessions(3)).await;
    let mut lone = client(addr, 1);
    lone.initialize(json!({})).await;
    let mut many = Vec::new();
    for _ in 0..2 {
        let mut c = client(addr, 2);
        c.initialize(json!({})).await;
        many.push(c);
    }
    let mut newcomer = client(addr, 3);
    newcomer.initialize(json!({})).await;
    assert_eq!(ping_status(&many[0]).await, 404, "the older session of the address holding two was ended");
    assert_eq!(ping_status(&lone).await, 200, "the lone address's session, though idle longest, was kept");
    assert_eq!(ping_status(&many[1]).await, 200);
    assert_eq!(ping_status(&newcomer).await, 200);
}

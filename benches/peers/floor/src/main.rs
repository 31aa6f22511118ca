//! The floor peer: what "parse a JSON-RPC request, answer it over Streamable HTTP" costs with nothing else in the
//! way. Each request body is parsed into typed, borrowed structs; the answers are fixed but for the id and the
//! echoed text (decoded and encoded again, as a real server would).
//!
//! - `initialize` answers with a fresh `Mcp-Session-Id`; a 2025 request after it must carry one (its presence is
//!   checked, nothing more); notifications get 202 and no body.
//! - A request whose `_meta` names the 2026-07-28 protocol version, and `server/discover`, are answered without a
//!   session, with `resultType: "complete"`.
//! - `tools/list`, `tools/call` of `echo(text)`, `ping`; anything else is method not found. Every answer is
//!   `application/json`.
//!
//! Usage: `floor http PORT [--threads N]` (default 1: a current-thread runtime) or `floor stdio`
//! (newline-delimited, the same answers, no sessions).

use std::borrow::Cow;
use std::convert::Infallible;
use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use serde::Deserialize;
use serde_json::value::RawValue;

const V2026: &str = "2026-07-28";
const SERVER_INFO: &str = r#"{"name":"floor","version":"0.1.0"}"#;

#[derive(Deserialize)]
struct Rpc<'a> {
    #[serde(default, borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    method: Cow<'a, str>,
    #[serde(default, borrow)]
    params: Option<Params<'a>>,
}

#[derive(Deserialize)]
struct Params<'a> {
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    arguments: Option<Arguments<'a>>,
    #[serde(default, borrow, rename = "_meta")]
    meta: Option<Meta<'a>>,
}

#[derive(Deserialize)]
struct Arguments<'a> {
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Meta<'a> {
    #[serde(default, borrow, rename = "io.modelcontextprotocol/protocolVersion")]
    version: Option<Cow<'a, str>>,
}

/// What a request asks for, answered.
enum Answer {
    /// A JSON-RPC response (result or error).
    Json(Vec<u8>),
    /// A notification: nothing to say.
    Accepted,
    /// Not JSON-RPC at all.
    Invalid,
}

/// Answer one message. `session` says whether a 2025 request came with a session id (stdio: always).
fn answer(body: &[u8], session: bool) -> (Answer, bool) {
    let Ok(rpc) = serde_json::from_slice::<Rpc>(body) else {
        return (Answer::Invalid, false);
    };
    let v2026 = rpc.method == "server/discover"
        || rpc.params.as_ref().and_then(|p| p.meta.as_ref()).and_then(|m| m.version.as_deref()) == Some(V2026);
    let Some(id) = rpc.id else {
        return (Answer::Accepted, false);
    };
    let initialize = rpc.method == "initialize";
    if !v2026 && !initialize && !session {
        return (Answer::Json(error(id, -32600, "a 2025 request needs an Mcp-Session-Id")), false);
    }
    let complete = if v2026 { r#","resultType":"complete""# } else { "" };
    let result = match rpc.method.as_ref() {
        "initialize" => {
            format!(r#"{{"protocolVersion":"2025-11-25","capabilities":{{"tools":{{}}}},"serverInfo":{SERVER_INFO}}}"#)
        }
        "server/discover" => format!(
            r#"{{"supportedVersions":["2025-11-25","{V2026}"],"capabilities":{{"tools":{{}}}},"serverInfo":{SERVER_INFO}{complete}}}"#
        ),
        "ping" => format!("{{{}}}", complete.trim_start_matches(',')),
        "tools/list" => format!(
            r#"{{"tools":[{{"name":"echo","description":"Echo the text back","inputSchema":{{"type":"object","properties":{{"text":{{"type":"string"}}}},"required":["text"]}}}}]{complete}}}"#
        ),
        "tools/call" => {
            let params = rpc.params.as_ref();
            let text = params.and_then(|p| p.arguments.as_ref()).and_then(|a| a.text.as_deref());
            match (params.and_then(|p| p.name.as_deref()), text) {
                (Some("echo"), Some(text)) => {
                    let mut out = br#"{"content":[{"type":"text","text":"#.to_vec();
                    serde_json::to_writer(&mut out, text).expect("a str serializes");
                    out.extend_from_slice(br#"}],"isError":false"#);
                    out.extend_from_slice(complete.as_bytes());
                    out.push(b'}');
                    return (Answer::Json(response(id, &out)), initialize);
                }
                (Some("echo"), None) => return (Answer::Json(error(id, -32602, "echo needs a text")), false),
                _ => return (Answer::Json(error(id, -32602, "unknown tool")), false),
            }
        }
        _ => return (Answer::Json(error(id, -32601, "method not found")), false),
    };
    (Answer::Json(response(id, result.as_bytes())), initialize)
}

fn response(id: &RawValue, result: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(result.len() + 48);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    out.extend_from_slice(id.get().as_bytes());
    out.extend_from_slice(br#","result":"#);
    out.extend_from_slice(result);
    out.push(b'}');
    out
}

fn error(id: &RawValue, code: i32, message: &str) -> Vec<u8> {
    let mut out = br#"{"jsonrpc":"2.0","id":"#.to_vec();
    out.extend_from_slice(id.get().as_bytes());
    out.extend_from_slice(format!(r#","error":{{"code":{code},"message":"#).as_bytes());
    serde_json::to_writer(&mut out, message).expect("a str serializes");
    out.extend_from_slice(b"}}");
    out
}

static SESSIONS: AtomicU64 = AtomicU64::new(0);

fn plain(status: StatusCode) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::new()));
    *r.status_mut() = status;
    r
}

async fn serve(req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    if req.uri().path() != "/mcp" {
        return Ok(plain(StatusCode::NOT_FOUND));
    }
    if req.method() != Method::POST {
        return Ok(plain(StatusCode::METHOD_NOT_ALLOWED));
    }
    let session = req.headers().contains_key("mcp-session-id");
    let Ok(body) = req.into_body().collect().await else {
        return Ok(plain(StatusCode::BAD_REQUEST));
    };
    let (answer, initialized) = answer(&body.to_bytes(), session);
    Ok(match answer {
        Answer::Invalid => plain(StatusCode::BAD_REQUEST),
        Answer::Accepted => plain(StatusCode::ACCEPTED),
        Answer::Json(bytes) => {
            let mut r = Response::new(Full::new(Bytes::from(bytes)));
            r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            if initialized {
                let id = format!("floor-{:016x}", SESSIONS.fetch_add(1, Ordering::Relaxed) + 1);
                r.headers_mut().insert("mcp-session-id", HeaderValue::from_str(&id).expect("ASCII"));
            }
            r
        }
    })
}

async fn http(port: u16) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    loop {
        let (stream, _) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        tokio::spawn(async move {
            let io = hyper_util::rt::TokioIo::new(stream);
            let _ = hyper::server::conn::http1::Builder::new()
                .keep_alive(true)
                .serve_connection(io, hyper::service::service_fn(serve))
                .await;
        });
    }
}

/// Newline-delimited: read a line, answer it; flush when no more input is already buffered.
fn stdio() -> std::io::Result<()> {
    let mut input = std::io::BufReader::with_capacity(1 << 16, std::io::stdin().lock());
    let mut output = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let mut line = Vec::new();
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            return output.flush();
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if let (Answer::Json(bytes), _) = answer(&line, true) {
            output.write_all(&bytes)?;
            output.write_all(b"\n")?;
        }
        if input.buffer().is_empty() {
            output.flush()?;
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: floor http PORT [--threads N] | floor stdio";
    let result = match args.first().map(String::as_str) {
        Some("stdio") => stdio(),
        Some("http") => {
            let Some(port) = args.get(1).and_then(|p| p.parse::<u16>().ok()) else {
                eprintln!("{usage}");
                std::process::exit(2);
            };
            let threads = match args.get(2).map(String::as_str) {
                Some("--threads") => args.get(3).and_then(|n| n.parse::<usize>().ok()).unwrap_or(1),
                _ => 1,
            };
            let rt = if threads <= 1 {
                tokio::runtime::Builder::new_current_thread().enable_io().build()
            } else {
                tokio::runtime::Builder::new_multi_thread().worker_threads(threads).enable_io().build()
            };
            rt.and_then(|rt| rt.block_on(http(port)))
        }
        _ => {
            eprintln!("{usage}");
            std::process::exit(2);
        }
    };
    if let Err(e) = result {
        eprintln!("floor: {e}");
        std::process::exit(1);
    }
}

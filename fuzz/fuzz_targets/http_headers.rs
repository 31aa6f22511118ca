//! HTTP headers of the 2026 era (mcp-runtime/src/era/v2026.rs). The input is lines: a method, the request's
//! `params` as JSON (an empty line: none), then `name: value` headers (the value's bytes as given).
//!
//! - `decode_header_value`, on every line and header value: a value without the exact `=?base64?…?=` wrapper is
//!   itself; with it, it is `Ok` exactly when the payload is strict, padded, standard Base64 (RFC 4648, checked by a
//!   decoder of our own) of UTF-8, and then it is that text. Any text wrapped by an encoder decodes back to itself.
//! - `check_http_headers`, against a server with one tool whose `region`, `shard` and `dry_run` arguments are
//!   mirrored in `Mcp-Param-*` headers: when it accepts, the headers agree with the body as the 2026-07-28 transport
//!   says (the version header present and equal to the body's served version, `Mcp-Method` the method, `Mcp-Name`
//!   decoding to the name or URI, each mirrored argument present in its header and equal to it); when it refuses,
//!   the code is -32020, -32602 (the envelope is incomplete) or -32022 (the version is not served).

#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use mcp::__fuzz::{check_http_headers, decode_header_value};
use mcp::__private::http::{HeaderMap, HeaderName, HeaderValue};
use mcp::protocol::VERSION_2026;
use mcp::{ErrorCode, Server};
use mcp_fuzz::{base64_decode, base64_encode, Alphabet};
use serde_json::Value;

const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
const META_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";

/// Runs a query in a region.
#[mcp::tool]
fn route(
    /// Where.
    #[mcp(header = "Region")]
    region: String,
    /// Which shard.
    #[mcp(header = "Shard")]
    shard: Option<i64>,
    /// Whether to only pretend.
    #[mcp(header = "Dry-Run")]
    dry_run: Option<bool>,
    /// What.
    query: Option<String>,
) -> String {
    format!("{region} {shard:?} {dry_run:?} {query:?}")
}

/// The arguments of `route` mirrored in headers, and the headers.
const MIRRORED: [(&str, &str); 3] =
    [("region", "mcp-param-region"), ("shard", "mcp-param-shard"), ("dry_run", "mcp-param-dry-run")];

fn server() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(|| {
        Server::builder().name("fuzz").request_state_key([7; 32]).tool::<route>().build().expect("the server builds")
    })
}

fn check_decoding(raw: &str) {
    let decoded = decode_header_value(raw);
    let Some(payload) = raw.strip_prefix("=?base64?").and_then(|r| r.strip_suffix("?=")) else {
        assert_eq!(decoded.as_deref(), Ok(raw), "a value without the wrapper is literal");
        return;
    };
    let want = base64_decode(payload, Alphabet::Standard, true).map(String::from_utf8);
    match (&decoded, want) {
        (Ok(text), Some(Ok(want))) => assert_eq!(*text, want, "{raw:?}"),
        (Err(_), None | Some(Err(_))) => {}
        (got, want) => panic!("{raw:?} decodes to {got:?}; strict Base64 of UTF-8 says {want:?}"),
    }
}

fn check_round_trip(text: &str) {
    let wrapped = format!("=?base64?{}?=", base64_encode(text.as_bytes(), Alphabet::Standard, true));
    assert_eq!(decode_header_value(&wrapped).as_deref(), Ok(text), "{wrapped:?}");
}

/// A header's value, trimmed of spaces and tabs; the header must hold visible ASCII.
fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    let value = headers.get(name)?;
    let text = value.to_str().unwrap_or_else(|_| panic!("accepted a {name} header of invisible characters: {value:?}"));
    Some(text.trim_matches([' ', '\t']))
}

/// What an accepted request must satisfy.
fn check_accepted(headers: &HeaderMap, method: &str, params: Option<&Value>) {
    let meta = params.and_then(|p| p.get("_meta")).and_then(Value::as_object).expect("accepted without `_meta`");
    assert!(meta.contains_key(META_CAPABILITIES), "accepted without client capabilities");
    let version = header(headers, "mcp-protocol-version").expect("accepted without MCP-Protocol-Version");
    assert_eq!(version, VERSION_2026);
    assert_eq!(meta.get(META_VERSION).and_then(Value::as_str), Some(version));
    assert_eq!(header(headers, "mcp-method"), Some(method), "Mcp-Method");
    let name_key = match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        _ => None,
    };
    if let Some(key) = name_key {
        let raw = header(headers, "mcp-name").expect("accepted without Mcp-Name");
        let body = params.and_then(|p| p.get(key)).and_then(Value::as_str).unwrap_or_default();
        assert_eq!(decode_header_value(raw).as_deref(), Ok(body), "Mcp-Name");
    }
    if method != "tools/call" || params.and_then(|p| p.get("name")) != Some(&Value::from("route")) {
        return;
    }
    let arguments = params.and_then(|p| p.get("arguments"));
    for (argument, name) in MIRRORED {
        let raw = header(headers, name); // a recognised header holds visible ASCII, its argument there or not
        let value = match arguments.and_then(|a| a.get(argument)) {
            None | Some(Value::Null) => continue,
            Some(v) => v,
        };
        let raw = raw.unwrap_or_else(|| panic!("accepted without {name}, mirroring {value}"));
        let given = decode_header_value(raw).unwrap_or_else(|e| panic!("accepted {name}: {e}"));
        match value {
            Value::String(s) => assert_eq!(given, *s, "{name}"),
            Value::Bool(b) => assert_eq!(given, b.to_string(), "{name}"),
            Value::Number(n) => {
                assert_eq!(given.parse::<f64>().ok(), n.as_f64(), "{name}: integers compare numerically")
            }
            other => panic!("accepted {name}: {given:?} for {other}"),
        }
    }
}

fn check_refused(error: &mcp::Error, headers: &HeaderMap, params: Option<&Value>) {
    let meta = params.and_then(|p| p.get("_meta")).and_then(Value::as_object);
    let complete = meta.is_some_and(|m| m.contains_key(META_VERSION) && m.contains_key(META_CAPABILITIES));
    match error.code {
        ErrorCode::HEADER_MISMATCH => {}
        ErrorCode::INVALID_PARAMS => assert!(!complete, "-32602 for a complete envelope: {error}"),
        ErrorCode::UNSUPPORTED_VERSION => {
            let body = meta.and_then(|m| m.get(META_VERSION)).and_then(Value::as_str);
            let version = header(headers, "mcp-protocol-version");
            assert!(version.is_some() && version == body, "-32022 for a version the header does not name: {error}");
            assert_ne!(version, Some(VERSION_2026), "{error}");
        }
        other => panic!("refused with {other:?}: {error}"),
    }
}

fuzz_target!(|data: &[u8]| {
    let mut lines = data.split(|b| *b == b'\n');
    let method = String::from_utf8_lossy(lines.next().unwrap_or_default()).into_owned();
    let params = match lines.next().unwrap_or_default() {
        [] => None,
        json => match serde_json::from_slice::<Value>(json) {
            Ok(v) => Some(v),
            Err(_) => return,
        },
    };
    let mut headers = HeaderMap::new();
    for line in lines {
        if let Ok(text) = std::str::from_utf8(line) {
            check_decoding(text);
            check_round_trip(text);
        }
        let Some(colon) = line.iter().position(|b| *b == b':') else { continue };
        let value = &line[colon + 1..];
        let value = value.strip_prefix(b" ").unwrap_or(value);
        let (Ok(name), Ok(value)) = (HeaderName::from_bytes(&line[..colon]), HeaderValue::from_bytes(value)) else {
            continue;
        };
        if let Ok(text) = value.to_str() {
            check_decoding(text);
        }
        headers.append(name, value);
    }
    match check_http_headers(&headers, &method, params.as_ref(), server()) {
        Ok(()) => check_accepted(&headers, &method, params.as_ref()),
        Err(error) => check_refused(&error, &headers, params.as_ref()),
    }
});

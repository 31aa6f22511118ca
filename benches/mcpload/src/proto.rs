//! What mcpload says and how it reads the answers: the two eras, requests serialized once with a fixed-width id
//! slot, and the check every tools/call answer goes through.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::{Value, json};

/// The protocol version of each era.
pub const V2025: &str = "2025-11-25";
pub const V2026: &str = "2026-07-28";

/// The width of a request's id slot: the id is written right-aligned, after spaces (`"id":          42`), so a
/// request's bytes keep their length whatever the id.
pub const ID_WIDTH: usize = 12;

/// A protocol revision: 2025-11-25 (sessions, `initialize`) or 2026-07-28 (stateless, the `_meta` envelope).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Era {
    V2025,
    V2026,
}

impl Era {
    pub fn parse(s: &str) -> Result<Era, String> {
        match s {
            "2025" | V2025 => Ok(Era::V2025),
            "2026" | V2026 => Ok(Era::V2026),
            _ => Err(format!("--era: expected 2025 or 2026, got {s:?}")),
        }
    }

    /// The short name the output line carries.
    pub fn name(self) -> &'static str {
        match self {
            Era::V2025 => "2025",
            Era::V2026 => "2026",
        }
    }

    /// `params` as this era sends them: in 2026 with the envelope in `_meta`.
    pub fn params(self, params: Value) -> Value {
        let mut params = match params {
            Value::Object(map) => map,
            _ => serde_json::Map::new(),
        };
        if self == Era::V2026 {
            params.insert(
                "_meta".into(),
                json!({
                    "io.modelcontextprotocol/protocolVersion": V2026,
                    "io.modelcontextprotocol/clientCapabilities": {},
                    "io.modelcontextprotocol/clientInfo": client_info(),
                }),
            );
        }
        Value::Object(params)
    }

    /// The request that checks the server is there: `ping` in 2025, `server/discover` in 2026.
    pub fn ping_method(self) -> &'static str {
        match self {
            Era::V2025 => "ping",
            Era::V2026 => "server/discover",
        }
    }
}

pub fn client_info() -> Value {
    json!({"name": "mcpload", "version": env!("CARGO_PKG_VERSION")})
}

/// The params of 2025's `initialize`.
pub fn initialize_params() -> Value {
    json!({"protocolVersion": V2025, "capabilities": {}, "clientInfo": client_info()})
}

/// The params of a tools/call of `tool` with `arguments`, in `era`.
pub fn call_params(era: Era, tool: &str, arguments: Value) -> Value {
    era.params(json!({"name": tool, "arguments": arguments}))
}

/// A notification's bytes (no id).
pub fn notification(method: &str, params: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({"jsonrpc": "2.0", "method": method, "params": params})).expect("a Value serializes")
}

/// A request serialized once, with a fixed-width slot for its id.
#[derive(Clone)]
pub struct Template {
    pub bytes: Vec<u8>,
    id_at: usize,
}

impl Template {
    pub fn new(method: &str, params: &Value) -> Template {
        let mut bytes = br#"{"jsonrpc":"2.0","id":"#.to_vec();
        let id_at = bytes.len();
        bytes.extend(std::iter::repeat_n(b' ', ID_WIDTH));
        bytes.extend_from_slice(br#","method":"#);
        serde_json::to_writer(&mut bytes, method).expect("a str serializes");
        bytes.extend_from_slice(br#","params":"#);
        serde_json::to_writer(&mut bytes, params).expect("a Value serializes");
        bytes.push(b'}');
        Template { bytes, id_at }
    }

    /// The same request after `head` (an HTTP request's head), its id slot moved along.
    pub fn after(self, mut head: Vec<u8>) -> Template {
        let id_at = head.len() + self.id_at;
        head.extend_from_slice(&self.bytes);
        Template { bytes: head, id_at }
    }

    pub fn set_id(&mut self, id: u64) {
        write_id(&mut self.bytes[self.id_at..self.id_at + ID_WIDTH], id);
    }
}

/// Write `id` right-aligned into `slot`, spaces before it.
fn write_id(slot: &mut [u8], mut id: u64) {
    let mut i = slot.len();
    loop {
        i -= 1;
        slot[i] = b'0' + (id % 10) as u8;
        id /= 10;
        if id == 0 || i == 0 {
            break;
        }
    }
    slot[..i].fill(b' ');
}

/// The kinds of message a peer sends, as far as mcpload cares.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default, borrow)]
    method: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    result: Option<CallResult<'a>>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct CallResult<'a> {
    #[serde(default, borrow)]
    content: Vec<Content<'a>>,
    #[serde(default, rename = "isError")]
    is_error: Option<bool>,
    #[serde(default, borrow, rename = "resultType")]
    result_type: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Content<'a> {
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
}

/// What a tools/call answer was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    /// A JSON-RPC error.
    RpcError,
    /// A result with `isError: true`.
    ToolError,
    /// 2026: a result whose `resultType` is not `complete`.
    NotComplete,
    /// Not the text sent.
    Mismatch,
    /// Not JSON, or not a JSON-RPC response, or an HTTP status other than 200.
    BadResponse,
    /// The connection failed, or timed out.
    Transport,
}

impl Outcome {
    pub const ALL: [Outcome; 7] = [
        Outcome::Ok,
        Outcome::RpcError,
        Outcome::ToolError,
        Outcome::NotComplete,
        Outcome::Mismatch,
        Outcome::BadResponse,
        Outcome::Transport,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::RpcError => "rpc_error",
            Outcome::ToolError => "tool_error",
            Outcome::NotComplete => "not_complete",
            Outcome::Mismatch => "mismatch",
            Outcome::BadResponse => "bad_response",
            Outcome::Transport => "transport_error",
        }
    }
}

/// One message read from a peer.
pub enum Message {
    /// A response, with its numeric id and the check of its result against the text sent.
    Response { id: Option<u64>, outcome: Outcome },
    /// A request from the server: it wants an answer.
    Request { id: Value },
    /// A notification, or anything else that is not ours.
    Other,
}

/// Read one message; a response is checked as the answer to an echo of `expected` (`None`: any result is fine).
pub fn classify(bytes: &[u8], era: Era, expected: Option<&str>) -> Message {
    let Ok(m) = serde_json::from_slice::<Envelope>(bytes) else {
        return Message::Other;
    };
    if m.method.is_some() {
        return match m.id {
            Some(id) => Message::Request { id },
            None => Message::Other,
        };
    }
    let id = m.id.as_ref().and_then(Value::as_u64);
    let outcome = if m.error.is_some() {
        Outcome::RpcError
    } else if let Some(r) = m.result {
        if r.is_error == Some(true) {
            Outcome::ToolError
        } else if era == Era::V2026 && r.result_type.as_deref() != Some("complete") {
            Outcome::NotComplete
        } else if expected.is_some_and(|text| r.content.first().and_then(|c| c.text.as_deref()) != Some(text)) {
            Outcome::Mismatch
        } else {
            Outcome::Ok
        }
    } else {
        Outcome::BadResponse
    };
    Message::Response { id, outcome }
}

/// The answer to a server's request: mcpload offers nothing, so method not found.
pub fn method_not_found(id: &Value) -> Vec<u8> {
    let mut bytes = serde_json::to_vec(
        &json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "mcpload answers no requests"}}),
    )
    .expect("a Value serializes");
    bytes.push(b'\n');
    bytes
}

/// The text of an echo call: `--text`, or `--text-size` bytes of a repeated pattern.
pub fn echo_text(text: Option<String>, size: Option<usize>) -> String {
    match (text, size) {
        (Some(t), _) => t,
        (None, Some(n)) => "abcdefghijklmnopqrstuvwxyz0123456789".chars().cycle().take(n).collect(),
        (None, None) => "hello".to_owned(),
    }
}

/// The check of a 2026 `server/discover` answer: it must list 2026-07-28.
pub fn check_discover(answer: &Value) -> Result<(), String> {
    let listed = answer["result"]["supportedVersions"]
        .as_array()
        .is_some_and(|versions| versions.iter().any(|v| v.as_str() == Some(V2026)));
    if listed { Ok(()) } else { Err(format!("server/discover does not list {V2026}: {}", clip(answer))) }
}

/// A message for an error text, at most 400 characters of it.
pub fn clip(v: &Value) -> String {
    let s = v.to_string();
    if s.len() <= 400 {
        s
    } else {
        let mut end = 400;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}...", &s[..end])
    }
}

/// The name and version a server gave: 2025's `serverInfo`, or 2026's (in the result or its `_meta`).
pub fn server_info(answer: &Value) -> Value {
    let r = &answer["result"];
    [&r["serverInfo"], &r["_meta"]["io.modelcontextprotocol/serverInfo"]]
        .into_iter()
        .find(|v| v.is_object())
        .cloned()
        .unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_slot_keeps_the_request_valid_json() {
        let mut t = Template::new("tools/call", &call_params(Era::V2026, "echo", json!({"text": "hi"})));
        for id in [0, 7, 42, 123_456_789_012] {
            t.set_id(id);
            let v: Value = serde_json::from_slice(&t.bytes).unwrap();
            assert_eq!(v["id"], id);
            assert_eq!(v["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"], V2026);
        }
    }

    #[test]
    fn answers_are_classified() {
        let ok =
            br#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"hi"}],"resultType":"complete"}}"#;
        assert!(matches!(
            classify(ok, Era::V2026, Some("hi")),
            Message::Response { id: Some(3), outcome: Outcome::Ok }
        ));
        assert!(matches!(classify(ok, Era::V2025, Some("ho")), Message::Response { outcome: Outcome::Mismatch, .. }));
        let partial = br#"{"jsonrpc":"2.0","id":3,"result":{"content":[],"resultType":"input_required"}}"#;
        assert!(matches!(classify(partial, Era::V2026, None), Message::Response { outcome: Outcome::NotComplete, .. }));
        let err = br#"{"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"no"}}"#;
        assert!(matches!(classify(err, Era::V2025, None), Message::Response { outcome: Outcome::RpcError, .. }));
        let req = br#"{"jsonrpc":"2.0","id":"s1","method":"roots/list"}"#;
        assert!(matches!(classify(req, Era::V2025, None), Message::Request { .. }));
    }
}

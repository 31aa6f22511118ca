//! The 2026-07-28 era from the client's side: the per-request `_meta` envelope, and 2026 requests through the stdio
//! harness ([`Server`]).

use serde_json::{json, Map, Value};

use super::Server;

/// The protocol version of the 2026 era.
pub const VERSION: &str = "2026-07-28";

pub const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
pub const META_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
pub const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
pub const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// Whether a request belongs to the 2026 era: its `_meta` names a protocol version, or its method exists only there.
pub fn is_v2026_request(method: &str, params: &Value) -> bool {
    matches!(method, "server/discover" | "subscriptions/listen") || params["_meta"].get(META_VERSION).is_some()
}

/// The envelope a conforming 2026 client sends: version, capabilities and client info.
pub fn envelope(capabilities: Value) -> Value {
    json!({
        META_VERSION: VERSION,
        META_CAPABILITIES: capabilities,
        META_CLIENT_INFO: {"name": "modern-tests", "version": "0"},
    })
}

/// `params` with the envelope added to its `_meta` (keys already in `params._meta`, such as `progressToken`, stay
/// and win).
pub fn with_envelope(params: Value, capabilities: Value) -> Value {
    let mut params = match params {
        Value::Object(p) => p,
        Value::Null => Map::new(),
        other => panic!("params must be an object: {other}"),
    };
    let mut meta = envelope(capabilities);
    if let Some(Value::Object(given)) = params.remove("_meta") {
        for (k, v) in given {
            meta[k] = v;
        }
    }
    params.insert("_meta".into(), meta);
    Value::Object(params)
}

/// A whole 2026 request.
pub fn request(id: impl Into<Value>, method: &str, params: Value, capabilities: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id.into(), "method": method, "params": with_envelope(params, capabilities)})
}

/// Standard Base64 with padding (RFC 4648), for the `=?base64?…?=` header form.
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], chunk.get(1).copied().unwrap_or(0), chunk.get(2).copied().unwrap_or(0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The `=?base64?…?=` form of a header value.
pub fn base64_header(value: &str) -> String {
    format!("=?base64?{}?=", base64(value.as_bytes()))
}

/// The `io.modelcontextprotocol/subscriptionId` tag of a notification, if it has one.
pub fn subscription_tag(message: &Value) -> Option<&Value> {
    message["params"]["_meta"].get(META_SUBSCRIPTION_ID)
}

impl Server {
    /// Sends a 2026 request (the envelope added to `params`) with a fresh integer id; returns the id.
    pub fn v2026_request(&mut self, method: &str, params: Value, capabilities: Value) -> Value {
        self.request(method, with_envelope(params, capabilities))
    }

    /// Sends a 2026 request with this id.
    pub fn v2026_request_with_id(&mut self, id: Value, method: &str, params: Value, capabilities: Value) {
        self.request_with_id(id, method, with_envelope(params, capabilities));
    }

    /// Sends a 2026 request declaring `capabilities` and waits for its response.
    pub fn v2026_call_with(&mut self, method: &str, params: Value, capabilities: Value) -> Value {
        let id = self.v2026_request(method, params, capabilities);
        self.response(&id)
    }

    /// Sends a 2026 request declaring no capabilities and waits for its response.
    pub fn v2026_call(&mut self, method: &str, params: Value) -> Value {
        self.v2026_call_with(method, params, json!({}))
    }

    /// Calls a tool in a 2026 request and returns its `result` (panics on a JSON-RPC error).
    pub fn v2026_tool(&mut self, name: &str, arguments: Value) -> Value {
        let r = self.v2026_call("tools/call", json!({"name": name, "arguments": arguments}));
        r.get("result").cloned().unwrap_or_else(|| panic!("tools/call {name} failed: {r}"))
    }
}

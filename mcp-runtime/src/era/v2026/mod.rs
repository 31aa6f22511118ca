//! The 2026-07-28 front: stateless requests. Each carries its protocol version and the client's capabilities in
//! `params._meta`; nothing is remembered between requests except what the client brings back (`requestState`).
//!
//! - The envelope is checked (missing keys: -32602; an unsupported version: -32022 with `supported` and
//!   `requested`), then the request is described as a [`RequestMeta`] and handed to the dispatcher.
//! - `server/discover` and `subscriptions/listen` are answered here; the methods the 2026 era removed
//!   (`initialize`, `ping`, `logging/setLevel`, `resources/subscribe|unsubscribe`) are unknown methods.
//! - A handler's questions to the client (`ctx.elicit`, `ctx.sample`, `ctx.list_roots`) become an `input_required`
//!   result: the questions in `inputRequests`, and the answers so far, the handler's own round state and what the
//!   state is bound to (method, target, a digest of the arguments, an expiry, the caller) sealed in
//!   `requestState`. The client's retry runs the handler again, and this time the questions have answers.
//! - Results carry `resultType` and the server's info; cacheable ones carry `ttlMs` and `cacheScope`.
//! - On HTTP the standard headers (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`) must agree
//!   with the body: -32020 otherwise.

use std::sync::Arc;

use serde_json::{json, Map, Value};

use crate::context::{ClientInfo, Era, RequestMeta};
use crate::dispatch::{self, respond, Connection, Origin, Request};
use crate::server::Server;
use crate::wire::error::{Error, ErrorCode};
use crate::wire::jsonrpc::RequestId;
use crate::wire::protocol::{Implementation, LogLevel};

mod listen;
mod round;
pub(crate) mod tasks;

pub use round::DEFAULT_REQUEST_STATE_TTL;
pub(crate) use round::{missing_capability, Round};

/// The protocol version of this era.
pub const PROTOCOL_VERSION: &str = "2026-07-28";

/// The versions a request's `_meta` may name (older versions are served through `initialize`).
pub(crate) const VERSIONS: &[&str] = &[PROTOCOL_VERSION];

/// `_meta` keys of the 2026 envelope.
pub(crate) const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
pub(crate) const META_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
pub(crate) const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
pub(crate) const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
pub(crate) use crate::wire::protocol::META_SERVER_INFO;
pub(crate) const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// -32020: an HTTP header disagrees with the body, or a required one is missing.
pub const HEADER_MISMATCH: ErrorCode = ErrorCode(-32020);
pub use crate::wire::error::MISSING_CAPABILITY;
/// -32022: the request names a protocol version the server does not serve statelessly.
pub const UNSUPPORTED_VERSION: ErrorCode = ErrorCode(-32022);

/// Whether a message's method and params are of this era (see [`crate::era::of`], which decides).
pub(super) fn is_2026(method: &str, params: Option<&Value>) -> bool {
    let meta = params.and_then(|p| p.get("_meta"));
    matches!(method, "server/discover" | "subscriptions/listen")
        || [META_VERSION, META_CAPABILITIES, META_CLIENT_INFO].iter().any(|k| meta.and_then(|m| m.get(*k)).is_some())
}

/// What the envelope of a request said.
struct Envelope {
    version: String,
    client: Arc<ClientInfo>,
    log_level: Option<LogLevel>,
    meta: Map<String, Value>,
}

/// The `_meta` of a request, or -32602 naming what is missing.
#[cfg(feature = "http")]
pub(crate) fn meta_of(params: Option<&Value>) -> Result<&Map<String, Value>, Error> {
    static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    let meta = match params {
        None | Some(Value::Null) => EMPTY.get_or_init(Map::new),
        Some(Value::Object(p)) => match p.get("_meta") {
            None => EMPTY.get_or_init(Map::new),
            Some(Value::Object(m)) => m,
            Some(_) => return Err(Error::invalid_params("`params._meta` must be an object")),
        },
        Some(_) => return Err(Error::invalid_params("`params` must be an object")),
    };
    require_envelope_keys(meta)?;
    Ok(meta)
}

/// -32602 naming the required envelope keys `_meta` lacks.
fn require_envelope_keys(meta: &Map<String, Value>) -> Result<(), Error> {
    let missing: Vec<&str> = [META_VERSION, META_CAPABILITIES].into_iter().filter(|k| !meta.contains_key(*k)).collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(Error::invalid_params(format!(
        "invalid params: a 2026-07-28 request carries its envelope in `params._meta`; missing: {}",
        missing.join(", ")
    ))
    .with_data(json!({ "missing": missing })))
}

/// -32022 for a version this server does not serve statelessly.
pub(crate) fn unsupported_version(requested: &str) -> Error {
    Error::new(UNSUPPORTED_VERSION, format!("unsupported protocol version {requested:?}"))
        .with_data(json!({ "supported": VERSIONS, "requested": requested }))
}

/// Reads the envelope out of `_meta`: its keys go into their own fields, and what is left is the request's own
/// `_meta` (a progress token, trace context, ...).
fn envelope(meta: Map<String, Value>) -> Result<Envelope, Error> {
    require_envelope_keys(&meta)?;
    // One pass over `_meta` (removing each key would search and rebalance the map four times).
    let (mut version, mut capabilities, mut info, mut level, mut own) = (None, None, None, None, Map::new());
    for (key, value) in meta {
        match key.as_str() {
            META_VERSION => version = Some(value),
            META_CAPABILITIES => capabilities = Some(value),
            META_CLIENT_INFO => info = Some(value),
            META_LOG_LEVEL => level = Some(value),
            _ => {
                own.insert(key, value);
            }
        }
    }
    let version = match version {
        Some(Value::String(v)) => v,
        _ => return Err(Error::invalid_params(format!("`_meta[\"{META_VERSION}\"]` must be a string"))),
    };
    if !VERSIONS.contains(&version.as_str()) {
        return Err(unsupported_version(&version));
    }
    let capabilities = match capabilities {
        Some(c @ Value::Object(_)) => c,
        _ => return Err(Error::invalid_params(format!("`_meta[\"{META_CAPABILITIES}\"]` must be an object"))),
    };
    let info = match info {
        None | Some(Value::Null) => Implementation::new("unknown", "0"),
        Some(v) => serde_json::from_value(v)
            .map_err(|e| Error::invalid_params(format!("`_meta[\"{META_CLIENT_INFO}\"]`: {e}")))?,
    };
    let log_level = match level {
        None | Some(Value::Null) => None,
        Some(Value::String(l)) => Some(l.parse::<LogLevel>().map_err(Error::invalid_params)?),
        Some(other) => return Err(Error::invalid_params(format!("invalid log level {other}"))),
    };
    Ok(Envelope { version, client: Arc::new(ClientInfo { info, capabilities }), log_level, meta: own })
}

/// Serves one 2026-era request on a connection (the stdio process's, or one made for an HTTP request).
pub(crate) fn handle(conn: &Arc<Connection>, id: RequestId, method: String, params: Option<Value>, origin: &Origin) {
    if let Err(e) = serve(conn, id.clone(), method, params, origin) {
        respond(origin, &id, Err::<(), _>(e));
    }
}

fn serve(
    conn: &Arc<Connection>,
    id: RequestId,
    method: String,
    params: Option<Value>,
    origin: &Origin,
) -> Result<(), Error> {
    let mut params = match params {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(p)) => p,
        Some(_) => return Err(Error::invalid_params("`params` must be an object")),
    };
    let meta = match params.remove("_meta") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m,
        Some(_) => return Err(Error::invalid_params("`params._meta` must be an object")),
    };
    let envelope = envelope(meta)?;
    let server = conn.server();
    let own_meta = (!envelope.meta.is_empty()).then_some(envelope.meta);
    let mut meta = RequestMeta::new(Era::V2026, envelope.version.into(), Some(envelope.client)).with_meta(own_meta);
    meta.log_level = envelope.log_level;
    meta.http = origin.http.clone();
    match method.as_str() {
        "server/discover" => {
            // Through the server's layers (if any), as every request is.
            let request = || {
                let era: crate::context::EraState =
                    Arc::new(Round::plain(envelope.log_level, round::NO_QUESTIONS_HERE));
                (params, meta, era)
            };
            let discover = server.inner.discover.clone();
            dispatch::answer_front(conn, origin, (id, "server/discover"), request, move || Ok(discover));
            Ok(())
        }
        "subscriptions/listen" => listen::listen(conn, id, &params, meta, origin),
        // The 2026 era removed these; and nothing else is served beyond what both eras share.
        "initialize" | "ping" | "logging/setLevel" | "resources/subscribe" | "resources/unsubscribe" => {
            Err(Error::method_not_found(&method))
        }
        _ => {
            // A `tools/call`'s tool, found once: the round asks whether it can ask, the dispatcher runs it.
            let tool = match method.as_str() {
                "tools/call" => {
                    params.get("name").and_then(Value::as_str).and_then(|name| server.registry().tool(name))
                }
                _ => None,
            };
            let round = Round::for_request(server, tool.as_ref(), &method, &mut params, &meta, envelope.log_level)?;
            let request = Request { id, method: method.clone(), params, meta, era: Arc::new(round), tool };
            match dispatch::dispatch(conn, request, origin) {
                Some(()) => Ok(()),
                None => Err(Error::method_not_found(&method)),
            }
        }
    }
}

/// The result of `server/discover`, computed once per server.
pub(crate) fn discover_result(
    info: &Implementation,
    capabilities: &Value,
    instructions: Option<&str>,
    cache: crate::wire::protocol::CacheHint,
) -> Value {
    let mut versions: Vec<&str> = VERSIONS.to_vec();
    versions.extend(crate::wire::protocol::SUPPORTED_PROTOCOL_VERSIONS);
    let mut result = json!({
        "resultType": "complete",
        "supportedVersions": versions,
        "capabilities": capabilities,
        "ttlMs": cache.ttl_ms,
        "cacheScope": cache.scope.as_str(),
        "_meta": { META_SERVER_INFO: info },
    });
    if let Some(instructions) = instructions {
        result["instructions"] = Value::String(instructions.to_owned());
    }
    result
}

/// `resultType`, the server's info and the caching hints (if any), merged into a result.
pub(crate) fn stamp(server: &Server, mut result: Value, hints: Option<crate::wire::protocol::CacheHint>) -> Value {
    if let Value::Object(map) = &mut result {
        map.insert("resultType".into(), Value::String("complete".into()));
        stamp_server_info(server, map);
        if let Some(cache) = hints {
            map.insert("ttlMs".into(), cache.ttl_ms.into());
            map.insert("cacheScope".into(), cache.scope.as_str().into());
        }
    }
    result
}

/// The fields every 2026 result starts with, as JSON members: `"resultType":"complete","_meta":{serverInfo}`.
pub(crate) fn result_prefix(info: &Value) -> String {
    format!(r#""resultType":"complete","_meta":{{"{META_SERVER_INFO}":{info}}}"#)
}

pub(crate) fn stamp_server_info(server: &Server, map: &mut Map<String, Value>) {
    crate::wire::protocol::stamp_server_info(&server.inner.info_value, map)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dispatch::ResultKind;

    #[test]
    fn complete_results_are_stamped_in_one_pass_and_stay_valid_json() {
        let server = Server::builder().name("enc").version("1").build().unwrap();
        let id = RequestId::Number(7);
        let frame = |result: &Value, kind| -> Value {
            let hints = (kind != ResultKind::Plain).then_some(server.inner.cache);
            let prefix = &server.inner.result_prefix;
            let frame =
                crate::wire::jsonrpc::encode_result_stamped(&id, result, prefix, hints, |v| stamp(&server, v, hints));
            let text = frame.text();
            serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
        };
        // A tool's own `_meta` is merged with the server's info; a `_meta` deeper down is the content's own.
        let tool = |meta: Option<Map<String, Value>>| {
            let mut result = crate::CallToolResult::success(vec![crate::Content::text("hi")]);
            result.meta = meta;
            let text =
                crate::wire::jsonrpc::encode_result_stamped(&id, &result, &server.inner.result_prefix, None, |v| {
                    stamp(&server, v, None)
                })
                .into_text();
            serde_json::from_str::<Value>(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
        };
        let own = tool(Some(json!({"trace": "t1"}).as_object().unwrap().clone()));
        assert_eq!(
            (own["result"]["_meta"]["trace"].as_str(), own["result"]["resultType"].as_str()),
            (Some("t1"), Some("complete"))
        );
        assert_eq!(own["result"]["_meta"][META_SERVER_INFO]["name"], "enc", "{own}");
        let nested = frame(&json!({"content": [{"type": "text", "text": "hi", "_meta": {"k": 1}}]}), ResultKind::Plain);
        assert_eq!(nested["result"]["content"][0]["_meta"]["k"], 1, "{nested}");
        assert_eq!(nested["result"]["_meta"][META_SERVER_INFO]["name"], "enc", "{nested}");
        let r = frame(&json!({"content": [{"type": "text", "text": "hi"}]}), ResultKind::Plain);
        assert_eq!(r["id"], 7);
        assert_eq!(r["result"]["resultType"], "complete");
        assert_eq!(r["result"]["content"][0]["text"], "hi");
        assert_eq!(r["result"]["_meta"][META_SERVER_INFO]["name"], "enc");
        // An empty result: only the stamped fields.
        let r = frame(&json!({}), ResultKind::Plain);
        assert_eq!(r["result"].as_object().unwrap().len(), 2, "{r}");
        // Caching hints on cacheable results.
        let r = frame(&json!({"contents": []}), ResultKind::Read);
        assert!(r["result"]["ttlMs"].is_number() && r["result"]["cacheScope"].is_string(), "{r}");
        // A result with a `_meta` of its own is merged, not duplicated.
        let r = frame(&json!({"content": [], "_meta": {"mine": 1}}), ResultKind::Plain);
        assert_eq!(r["result"]["_meta"]["mine"], 1);
        assert_eq!(r["result"]["_meta"][META_SERVER_INFO]["name"], "enc");
    }

    #[test]
    fn missing_capability_names_it_as_a_capabilities_object() {
        let e = missing_capability(&["sampling", "tools"]);
        assert_eq!(e.code, MISSING_CAPABILITY);
        assert_eq!(e.data, Some(json!({ "requiredCapabilities": { "sampling": { "tools": {} } } })));
    }

    #[test]
    fn the_envelope_needs_version_and_capabilities_and_a_served_version() {
        let meta = |m: Value| match m {
            Value::Object(m) => m,
            _ => unreachable!(),
        };
        let missing = envelope(meta(json!({ META_VERSION: "2026-07-28" }))).err().unwrap();
        assert_eq!(missing.code, ErrorCode::INVALID_PARAMS);
        assert!(missing.message.contains(META_CAPABILITIES), "{}", missing.message);
        let old = envelope(meta(json!({ META_VERSION: "2025-11-25", META_CAPABILITIES: {} }))).err().unwrap();
        assert_eq!(old.code, UNSUPPORTED_VERSION);
        assert_eq!(old.data.unwrap()["requested"], "2025-11-25");
        let bad_level =
            envelope(meta(json!({ META_VERSION: "2026-07-28", META_CAPABILITIES: {}, META_LOG_LEVEL: "loud" })));
        assert_eq!(bad_level.err().unwrap().code, ErrorCode::INVALID_PARAMS);
        let ok = envelope(meta(json!({ META_VERSION: "2026-07-28", META_CAPABILITIES: {"roots": {}} }))).ok();
        assert!(ok.is_some_and(|e| e.log_level.is_none() && e.client.capabilities["roots"] == json!({})));
    }
}

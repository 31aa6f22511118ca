//! The 2026-07-28 front: self-contained requests, no session. Each carries its protocol version and the client's capabilities in
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
use crate::wire::envelope::{json_string, RawEnvelope};
use crate::wire::error::{Error, ErrorCode};
use crate::wire::jsonrpc::Received;
use crate::wire::protocol::{Implementation, LogLevel};

mod listen;
mod round;
pub(crate) mod tasks;

pub use round::DEFAULT_REQUEST_STATE_TTL;
pub(crate) use round::{missing_capability, Round};

/// The protocol version of this era.
pub(crate) use crate::wire::protocol::VERSION_2026 as PROTOCOL_VERSION;

/// The versions a request's `_meta` may name (older versions are served through `initialize`).
pub(crate) const VERSIONS: &[&str] = &[PROTOCOL_VERSION];

pub(crate) use crate::wire::envelope::{META_CAPABILITIES, META_CLIENT_INFO, META_VERSION};
pub(crate) use crate::wire::protocol::META_SERVER_INFO;
pub(crate) const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

pub(crate) use crate::wire::error::MISSING_CAPABILITY;
/// -32022: the request names a protocol version the server does not serve in the 2026 way (without `initialize`).
pub(crate) const UNSUPPORTED_VERSION: ErrorCode = ErrorCode::UNSUPPORTED_VERSION;

/// A context for what the server does on a caller's behalf outside any request of theirs: the checks of a webhook
/// subscription that another instance took over, with the caller the subscription was made by (`auth`). It is of
/// this era (the Events extension's), with no stream to write to (progress and logs go nowhere) and no questions
/// to ask; it is no request of a connection, so nothing cancels it but its owner dropping what it runs.
#[cfg(all(feature = "webhooks", feature = "redis"))]
pub(crate) fn detached_context(server: &Server, auth: Option<Arc<crate::auth::AuthInfo>>) -> crate::Context {
    let sink: crate::base::sink::Sink = Arc::new(crate::base::sink::NoSink);
    let connection = Connection::new(server.clone(), sink.clone());
    let mut meta = RequestMeta::new(Era::V2026, Arc::from(PROTOCOL_VERSION), None);
    meta.http = Some(Arc::new(crate::context::HttpRequest { headers: Default::default(), auth, peer: None }));
    let id = crate::wire::jsonrpc::RequestId::String(Arc::from("detached"));
    let round = Arc::new(Round::plain(None, round::NO_QUESTIONS_HERE));
    let request = crate::context::in_flight::InFlight::new(id, meta, connection, sink, round);
    crate::Context::new(Arc::new(request))
}

/// Whether a message is of this era (see [`crate::era::of`], which decides): it has an envelope (split off its
/// `params._meta` as it was read), or a method only this era has.
pub(super) fn is_2026(method: &str, envelope: Option<&RawEnvelope>) -> bool {
    envelope.is_some() || matches!(method, "server/discover" | "subscriptions/listen")
}

/// What the envelope of a request said.
struct Envelope {
    version: Arc<str>,
    client: Arc<ClientInfo>,
    log_level: Option<LogLevel>,
}

/// A request's envelope (a message without one has an empty one), or -32602 naming what is missing or which of
/// `params` and `params._meta` is not an object.
#[cfg(feature = "http")]
pub(crate) fn envelope_of<'a>(
    params: Option<&Value>,
    envelope: Option<&'a RawEnvelope>,
) -> Result<&'a RawEnvelope, Error> {
    static EMPTY: RawEnvelope = RawEnvelope::EMPTY;
    match params {
        None | Some(Value::Null) => {}
        Some(Value::Object(p)) => {
            if p.get("_meta").is_some_and(|m| !m.is_object()) {
                return Err(Error::invalid_params("`params._meta` must be an object"));
            }
        }
        Some(_) => return Err(Error::invalid_params("`params` must be an object")),
    }
    let envelope = envelope.unwrap_or(&EMPTY);
    require_envelope_keys(envelope)?;
    Ok(envelope)
}

/// -32602 naming the required envelope keys that are missing.
fn require_envelope_keys(envelope: &RawEnvelope) -> Result<(), Error> {
    let present = [envelope.version().is_some(), envelope.capabilities().is_some()];
    if present == [true, true] {
        return Ok(());
    }
    let missing: Vec<&str> =
        [META_VERSION, META_CAPABILITIES].into_iter().zip(present).filter(|(_, p)| !p).map(|(k, _)| k).collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(Error::invalid_params(format!(
        "invalid params: a 2026-07-28 request carries its envelope in `params._meta`; missing: {}",
        missing.join(", ")
    ))
    .with_data(json!({ "missing": missing })))
}

/// -32022 for a version this server does not serve in the 2026 way (without `initialize`).
pub(crate) fn unsupported_version(requested: &str) -> Error {
    Error::new(UNSUPPORTED_VERSION, format!("unsupported protocol version {requested:?}"))
        .with_data(json!({ "supported": VERSIONS, "requested": requested }))
}

/// Reads the envelope: the version, the client (shared with the earlier requests whose envelope held the same
/// capabilities and info, see [`KnownClients`](crate::context::KnownClients)) and the log level.
fn read_envelope(server: &Server, envelope: Option<RawEnvelope>) -> Result<Envelope, Error> {
    let envelope = envelope.unwrap_or_default();
    require_envelope_keys(&envelope)?;
    let version = match envelope.version().map(json_string) {
        Some(Some(v)) => v,
        _ => return Err(Error::invalid_params(format!("`_meta[\"{META_VERSION}\"]` must be a string"))),
    };
    // The one version served, shared rather than copied into each request.
    static SERVED: std::sync::OnceLock<Arc<str>> = std::sync::OnceLock::new();
    let version = match &*version {
        PROTOCOL_VERSION => SERVED.get_or_init(|| Arc::from(PROTOCOL_VERSION)).clone(),
        other => return Err(unsupported_version(other)),
    };
    let capabilities = envelope.capabilities().unwrap_or_default();
    if !capabilities.starts_with('{') {
        return Err(Error::invalid_params(format!("`_meta[\"{META_CAPABILITIES}\"]` must be an object")));
    }
    let info = envelope.client_info().filter(|i| *i != "null");
    let client = server.inner.v2026().known_clients.get_or_read(capabilities, info, || {
        let info = match info {
            None => Implementation::new("unknown", "0"),
            Some(text) => serde_json::from_str(text)
                .map_err(|e| Error::invalid_params(format!("`_meta[\"{META_CLIENT_INFO}\"]`: {e}")))?,
        };
        let capabilities = serde_json::from_str(capabilities)
            .map_err(|e| Error::invalid_params(format!("`_meta[\"{META_CAPABILITIES}\"]`: {e}")))?;
        Ok::<_, Error>(ClientInfo { info, capabilities })
    })?;
    let log_level = match envelope.log_level() {
        None | Some("null") => None,
        Some(text) => match json_string(text) {
            Some(level) => Some(level.parse::<LogLevel>().map_err(Error::invalid_params)?),
            None => return Err(Error::invalid_params(format!("invalid log level {text}"))),
        },
    };
    Ok(Envelope { version, client, log_level })
}

/// Serves one 2026-era request on a connection (the stdio process's, or one made for an HTTP request).
pub(crate) fn handle(conn: &Arc<Connection>, received: Received, origin: &Origin) {
    let id = received.id.clone();
    if let Err(e) = serve(conn, received, origin) {
        respond(origin, &id, Err::<(), _>(e));
    }
}

fn serve(conn: &Arc<Connection>, received: Received, origin: &Origin) -> Result<(), Error> {
    let Received { id, method, params, envelope, arguments } = received;
    let mut params = match params {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(p)) => p,
        Some(_) => return Err(Error::invalid_params("`params` must be an object")),
    };
    // What is left of `_meta` once the envelope was split off is the request's own.
    let own_meta = match params.remove("_meta") {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) => (!m.is_empty()).then_some(m),
        Some(_) => return Err(Error::invalid_params("`params._meta` must be an object")),
    };
    let server = conn.server();
    let envelope = read_envelope(server, envelope)?;
    let mut meta = RequestMeta::new(Era::V2026, envelope.version, Some(envelope.client)).with_meta(own_meta);
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
            let discover = server.inner.v2026().discover.clone();
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
            let sent = (&mut params, arguments.as_deref());
            let round = Round::for_request(server, tool.as_deref(), &method, sent, &meta, envelope.log_level)?;
            let request = Request { id, method: method.clone(), params, arguments, meta, era: Arc::new(round), tool };
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
    crate::wire::protocol::stamp_server_info(&server.inner.v2026().info_value, map)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dispatch::ResultKind;
    use crate::wire::envelope::META_LOG_LEVEL;
    use crate::wire::jsonrpc::RequestId;

    #[test]
    fn complete_results_are_stamped_in_one_pass_and_stay_valid_json() {
        let server = Server::builder().name("enc").version("1").build().unwrap();
        let id = RequestId::Number(7);
        let frame = |result: &Value, kind| -> Value {
            let hints = (kind != ResultKind::Plain).then_some(server.inner.v2026().cache);
            let prefix = &server.inner.v2026().result_prefix;
            let frame =
                crate::wire::jsonrpc::encode_result_stamped(&id, result, prefix, hints, |v| stamp(&server, v, hints));
            let text = frame.text();
            serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
        };
        // A tool's own `_meta` is merged with the server's info; a `_meta` deeper down is the content's own.
        let tool = |meta: Option<Map<String, Value>>| {
            let mut result = crate::CallToolResult::success(vec![crate::Content::text("hi")]);
            result.meta = meta;
            let text = crate::wire::jsonrpc::encode_result_stamped(
                &id,
                &result,
                &server.inner.v2026().result_prefix,
                None,
                |v| stamp(&server, v, None),
            )
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
        let server = Server::builder().name("env").version("1").build().unwrap();
        let envelope = |m: Value| match m {
            Value::Object(mut m) => read_envelope(&server, RawEnvelope::take_from(&mut m)),
            _ => unreachable!(),
        };
        let meta = |m| m;
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
        let not_a_string = envelope(json!({ META_VERSION: 2026, META_CAPABILITIES: {} })).err().unwrap();
        assert!(not_a_string.message.contains("must be a string"), "{}", not_a_string.message);
        let not_an_object = envelope(json!({ META_VERSION: "2026-07-28", META_CAPABILITIES: [] })).err().unwrap();
        assert!(not_an_object.message.contains("must be an object"), "{}", not_an_object.message);
        let bad_info = envelope(json!({ META_VERSION: "2026-07-28", META_CAPABILITIES: {}, META_CLIENT_INFO: 7 }));
        assert_eq!(bad_info.err().unwrap().code, ErrorCode::INVALID_PARAMS);
    }

    #[test]
    fn a_client_seen_before_is_shared_and_the_known_ones_are_bounded() {
        let server = Server::builder().name("env").version("1").build().unwrap();
        let read = |info: Value| {
            let mut m = json!({ META_VERSION: "2026-07-28", META_CAPABILITIES: {"roots": {}}, META_CLIENT_INFO: info });
            let envelope = RawEnvelope::take_from(m.as_object_mut().unwrap());
            read_envelope(&server, envelope).unwrap().client
        };
        let first = read(json!({"name": "a", "version": "1"}));
        assert!(Arc::ptr_eq(&first, &read(json!({"name": "a", "version": "1"}))));
        let other = read(json!({"name": "b", "version": "1"}));
        assert!(!Arc::ptr_eq(&first, &other));
        assert_eq!((&*other.info.name, &other.capabilities["roots"]), ("b", &json!({})));
        for n in 0..crate::context::KnownClients::MAX {
            read(json!({"name": format!("c{n}"), "version": "1"}));
        }
        // The oldest is forgotten: read anew, equal but not the same.
        let again = read(json!({"name": "a", "version": "1"}));
        assert!(!Arc::ptr_eq(&first, &again) && again.info.name == "a");
        // Without client info: the unknown client.
        assert_eq!(read(Value::Null).info.name, "unknown");
    }
}

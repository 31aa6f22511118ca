//! Outgoing JSON-RPC messages, encoded: results, errors, notifications and requests, as frames or text, and a
//! result stamped with the 2026 era's members without a second pass.

use serde::Serialize;
use serde_json::{Map, Value};

use super::{Frame, FrameKind, RequestId};
use crate::wire::error::Error;

#[derive(Serialize)]
struct ResultFrame<'a, T: Serialize + ?Sized> {
    jsonrpc: &'static str,
    id: &'a RequestId,
    result: &'a T,
}

#[derive(Serialize)]
struct ErrorFrame<'a> {
    jsonrpc: &'static str,
    /// Left out when the request's id could not be read, as the MCP schema has it.
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a RequestId>,
    error: &'a Error,
}

#[derive(Serialize)]
struct NotificationFrame<'a, T: Serialize + ?Sized> {
    jsonrpc: &'static str,
    method: &'a str,
    params: &'a T,
}

/// The frames of JSON-RPC messages, encoded.
impl Frame {
    /// Encodes a successful response. Serialization of our own types cannot fail; if a user type's `Serialize`
    /// does, the client gets an internal error instead of nothing.
    pub(crate) fn result<T: Serialize + ?Sized>(id: &RequestId, result: &T) -> Frame {
        match serde_json::to_string(&ResultFrame { jsonrpc: "2.0", id, result }) {
            Ok(text) => Frame::new(text, FrameKind::Result),
            Err(e) => Frame::error(Some(id), &Error::internal(format!("could not serialize the result: {e}"))),
        }
    }

    /// Encodes a result response whose payloads take about `payload_len` bytes: a large one is written into a
    /// buffer of about its final size (text may grow a little where it needs escapes).
    pub(crate) fn result_sized<T: Serialize + ?Sized>(id: &RequestId, result: &T, payload_len: usize) -> Frame {
        let room = payload_room(payload_len);
        if room == 0 {
            return Frame::result(id, result);
        }
        let mut out = Vec::with_capacity(room + 512);
        let written = serde_json::to_writer(&mut out, &ResultFrame { jsonrpc: "2.0", id, result });
        match written.map_err(|e| e.to_string()).and_then(|()| String::from_utf8(out).map_err(|e| e.to_string())) {
            Ok(text) => Frame::new(text, FrameKind::Result),
            Err(e) => Frame::error(Some(id), &Error::internal(format!("could not serialize the result: {e}"))),
        }
    }

    /// Encodes an error response; `id` is `None` only when the request's id could not be read.
    pub(crate) fn error(id: Option<&RequestId>, error: &Error) -> Frame {
        let text = serde_json::to_string(&ErrorFrame { jsonrpc: "2.0", id, error }).unwrap_or_else(|_| {
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"internal error"}}"#.into()
        });
        Frame::new(text, FrameKind::Error(error.code.0))
    }

    /// Encodes a notification.
    pub(crate) fn notification<T: Serialize + ?Sized>(method: &str, params: &T) -> Frame {
        let text = serde_json::to_string(&NotificationFrame { jsonrpc: "2.0", method, params }).unwrap_or_else(|e| {
            tracing::error!(method, error = %e, "could not serialize a notification");
            String::new()
        });
        Frame::new(text, FrameKind::Notification)
    }

    /// Encodes a request (from the server to the client).
    pub(crate) fn request<T: Serialize + ?Sized>(id: &RequestId, method: &str, params: &T) -> Frame {
        let text = serde_json::to_string(&RequestFrame { jsonrpc: "2.0", id, method, params }).unwrap_or_else(|e| {
            tracing::error!(method, error = %e, "could not serialize a request");
            String::new()
        });
        Frame::new(text, FrameKind::Request)
    }
}

/// Encodes a successful response, as text (the client's side, which sends text).
#[cfg(feature = "client")]
pub(crate) fn encode_result<T: Serialize + ?Sized>(id: &RequestId, result: &T) -> String {
    Frame::result(id, result).into_text()
}

/// The room a frame reserves up front for payloads of `payload_len` bytes (text may grow a little where it needs
/// escapes): none below 64 KiB, where growing the buffer costs little.
pub(crate) fn payload_room(payload_len: usize) -> usize {
    const LARGE_RESULT: usize = 64 * 1024;
    if payload_len < LARGE_RESULT {
        0
    } else {
        payload_len + payload_len / 16
    }
}

/// Encodes an error response, as text (the client's side).
#[cfg(feature = "client")]
pub(crate) fn encode_error(id: Option<&RequestId>, error: &Error) -> String {
    Frame::error(id, error).into_text()
}

/// Encodes a notification, as text (the client's side).
#[cfg(feature = "client")]
pub(crate) fn encode_notification<T: Serialize + ?Sized>(method: &str, params: &T) -> String {
    Frame::notification(method, params).into_text()
}

/// Reads `params` as an object, treating an absent `params` as empty.
pub(crate) fn params_object(params: Option<Value>) -> Result<Map<String, Value>, Error> {
    match params {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(m)) => Ok(m),
        Some(_) => Err(Error::invalid_params("`params` must be an object")),
    }
}

#[derive(Serialize)]
struct RequestFrame<'a, T: Serialize + ?Sized> {
    jsonrpc: &'static str,
    id: &'a RequestId,
    method: &'a str,
    params: &'a T,
}

/// Encodes a request, as text (the client's side).
#[cfg(feature = "client")]
pub(crate) fn encode_request<T: Serialize + ?Sized>(id: &RequestId, method: &str, params: &T) -> String {
    Frame::request(id, method, params).into_text()
}

/// A result response whose result starts with `prefix` (JSON members: the 2026 `resultType` and server info) and,
/// when given, caching hints: the result serialized once, straight into the frame; the result's own opening brace
/// becomes a space, so its fields follow the stamped ones without a second copy of the payload. Through a `Value`
/// (`merge`) only when the result is not known to be an object without a `_meta` (or a `resultType`) of its own at
/// the top ([`WireResult::spliceable`](crate::wire::protocol::WireResult::spliceable)); a `_meta` deeper down, in its
/// content, is the content's own.
pub(crate) fn encode_result_stamped<T: crate::wire::protocol::WireResult>(
    id: &RequestId,
    result: &T,
    prefix: &str,
    hints: Option<crate::wire::protocol::CacheHint>,
    merge: impl FnOnce(Value) -> Value,
) -> Frame {
    let mut out = Vec::with_capacity(prefix.len() + 160 + payload_room(result.payload_len()));
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    if serde_json::to_writer(&mut out, id).is_err() {
        out.extend_from_slice(b"null");
    }
    out.extend_from_slice(br#","result":{"#);
    out.extend_from_slice(prefix.as_bytes());
    if let Some(cache) = hints {
        out.extend_from_slice(
            format!(r#","ttlMs":{},"cacheScope":"{}""#, cache.ttl_ms, cache.scope.as_str()).as_bytes(),
        );
    }
    out.push(b',');
    let start = out.len();
    if let Err(e) = serde_json::to_writer(&mut out, result) {
        return Frame::error(Some(id), &Error::internal(format!("could not serialize the result: {e}")));
    }
    // serde_json writes UTF-8; checking it (once) costs a pass over the bytes, not a copy.
    let mut out = match String::from_utf8(out) {
        Ok(out) => out,
        Err(e) => return Frame::error(Some(id), &Error::internal(format!("could not serialize the result: {e}"))),
    };
    let body = &out[start..];
    // What the result is decides, not a search of its text (its first and last bytes are checked as a guard: a type
    // that says it is spliceable serializes as an object).
    let spliceable = result.spliceable() && body.len() >= 2 && body.starts_with('{') && body.ends_with('}');
    if !spliceable {
        return match serde_json::from_str::<Value>(body) {
            Ok(value) => Frame::result(id, &merge(value)),
            Err(e) => Frame::error(Some(id), &Error::internal(e.to_string())),
        };
    }
    if body[1..body.len() - 1].trim().is_empty() {
        // `{}`: nothing to add after the stamped fields, nor the comma before them.
        out.truncate(start - 1);
        out.push('}');
    } else {
        // The result's own `{` goes: its members follow the stamped fields.
        out.replace_range(start..start + 1, " ");
    }
    out.push('}');
    Frame::new(out, FrameKind::Result)
}

//! JSON-RPC 2.0 framing: request ids, the classification of incoming messages and the encoding of outgoing ones.
//!
//! Nothing here knows about MCP methods; this is the envelope only.

use std::fmt;
use std::sync::Arc;

use serde::de::{MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

pub(crate) use crate::base::frame::{Frame, FrameKind};
use crate::wire::envelope::{KnownKey, RawEnvelope, Split, SplitMeta};
use crate::wire::error::{Error, ErrorCode};

mod encode;

#[cfg(feature = "client")]
pub(crate) use encode::{encode_error, encode_notification, encode_request, encode_result};
pub(crate) use encode::{encode_result_stamped, params_object};

/// A JSON-RPC request id: a string or an integer, echoed back exactly as received.
///
/// A handler reads its request's id with [`Context::request_id`](crate::Context::request_id).
///
/// ```
/// use mcp::RequestId;
///
/// let number: RequestId = serde_json::from_str("7").unwrap();
/// assert_eq!(number, RequestId::Number(7));
/// let string: RequestId = serde_json::from_str(r#""7""#).unwrap();
/// assert_eq!(string, RequestId::String("7".into()));
/// assert_eq!(string.to_string(), r#""7""#); // a string shows its quotes, so the two differ in logs
/// assert_eq!(serde_json::to_string(&string).unwrap(), r#""7""#);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// An integer id.
    Number(i64),
    /// A string id.
    String(Arc<str>),
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => write!(f, "{s:?}"),
        }
    }
}

impl RequestId {
    fn from_value(value: &Value) -> Option<RequestId> {
        match value {
            Value::Number(n) => n.as_i64().map(RequestId::Number),
            Value::String(s) => Some(RequestId::String(s.as_str().into())),
            _ => None,
        }
    }
}

/// One incoming message, classified.
///
/// A request or notification of the 2026 era has its envelope (see [`RawEnvelope`]) apart from `params`, whose
/// `_meta` holds only the request's own keys (and is left out when it has none); [`Incoming::parse`] splits it off,
/// [`Incoming::from_value`] does not.
///
/// A `tools/call` read by [`Incoming::parse`] has its `arguments` object apart too, as the text it was sent as (see
/// [`Arguments`](crate::handler::Arguments)): the tool's handler reads its arguments from it.
#[derive(Debug)]
pub(crate) enum Incoming {
    Request {
        id: RequestId,
        method: String,
        params: Option<Value>,
        envelope: Option<RawEnvelope>,
        /// A `tools/call`'s `arguments`, when they are an object and were read as text.
        arguments: Option<Box<RawValue>>,
    },
    Notification {
        method: String,
        params: Option<Value>,
        envelope: Option<RawEnvelope>,
    },
    /// A response to a request we sent; kept for server-to-client requests.
    Response {
        id: RequestId,
        outcome: Result<Value, Value>,
    },
}

/// A request as [`Incoming::parse`] read it, as an era's front takes it.
pub(crate) struct Received {
    pub id: RequestId,
    pub method: String,
    pub params: Option<Value>,
    pub envelope: Option<RawEnvelope>,
    /// A `tools/call`'s `arguments`, kept as text.
    pub arguments: Option<Box<RawValue>>,
}

/// The members of a JSON-RPC message, as they were sent (`null` is kept: a member that is `null` is one that is
/// present).
#[derive(Deserialize)]
struct Members<'a> {
    #[serde(default, borrow, deserialize_with = "present")]
    jsonrpc: Option<&'a str>,
    #[serde(default, deserialize_with = "present")]
    id: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    method: Option<String>,
    #[serde(default, deserialize_with = "present")]
    params: Option<Params>,
    #[serde(default, deserialize_with = "present")]
    result: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    error: Option<Value>,
}

/// A member that is there, even as `null`.
fn present<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// `params`, an object or an array (anything else fails, and the message is read again as a value, which says
/// what is wrong): an object's `_meta` split into the request's own keys and the 2026 envelope, and its
/// `arguments`, when they are an object, kept as text.
struct Params {
    value: Value,
    envelope: Option<RawEnvelope>,
    arguments: Option<Box<RawValue>>,
}

impl<'de> Deserialize<'de> for Params {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Params, D::Error> {
        deserializer.deserialize_any(ParamsVisitor)
    }
}

struct ParamsVisitor;

impl<'de> Visitor<'de> for ParamsVisitor {
    type Value = Params;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object or an array")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Params, A::Error> {
        let (mut map, mut envelope, mut arguments) = (Map::new(), None, None);
        while let Some(key) = access.next_key_seed(KnownKey(&["_meta", "arguments"]))? {
            match key {
                Ok(1) => {
                    let text = access.next_value::<&RawValue>()?;
                    // The last of a name wins, as in a map of values.
                    map.remove("arguments");
                    arguments = None;
                    if text.get().starts_with('{') {
                        arguments = Some(text.to_owned());
                    } else {
                        map.insert("arguments".to_owned(), serde_json::from_str(text.get()).map_err(de_error)?);
                    }
                }
                Ok(_) => {
                    let Split { own, envelope: read } = access.next_value_seed(SplitMeta)?;
                    // A `_meta` of the envelope's keys only is left out; anything else is kept as sent.
                    if read.is_none() || !own.is_empty() {
                        map.insert("_meta".to_owned(), Value::Object(own));
                    } else {
                        map.remove("_meta");
                    }
                    envelope = read;
                }
                Err(key) => {
                    map.insert(key, access.next_value()?);
                }
            }
        }
        Ok(Params { value: Value::Object(map), envelope, arguments })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, access: A) -> Result<Params, A::Error> {
        let items = Vec::<Value>::deserialize(serde::de::value::SeqAccessDeserializer::new(access))?;
        Ok(Params { value: Value::Array(items), envelope: None, arguments: None })
    }
}

impl Members<'_> {
    /// The message, if it is a well-formed one; `None` leaves what is wrong with it to [`Incoming::from_value`].
    fn classify(self) -> Option<Incoming> {
        let id = match &self.id {
            None => None,
            Some(v) => Some(RequestId::from_value(v)?),
        };
        if self.jsonrpc != Some("2.0") {
            return None;
        }
        let (mut params, envelope, mut arguments) = match self.params {
            Some(Params { value, envelope, arguments }) => (Some(value), envelope, arguments),
            None => (None, None, None),
        };
        // Only a tool's handler reads its arguments from text; anything else has them as values, as sent.
        if self.method.as_deref() != Some("tools/call") || id.is_none() {
            restore_arguments(&mut params, arguments.take());
        }
        match (self.method, id) {
            (Some(method), Some(id)) => Some(Incoming::Request { id, method, params, envelope, arguments }),
            (Some(method), None) => Some(Incoming::Notification { method, params, envelope }),
            (None, Some(id)) => match (self.result, self.error) {
                (Some(result), _) => Some(Incoming::Response { id, outcome: Ok(result) }),
                (None, Some(error)) => Some(Incoming::Response { id, outcome: Err(error) }),
                (None, None) => None,
            },
            (None, None) => None,
        }
    }
}

/// Why a line could not be turned into an [`Incoming`] message: the error to answer, and the id if one was legible.
#[derive(Debug)]
pub(crate) struct Rejected {
    pub id: Option<RequestId>,
    pub error: Error,
}

impl Incoming {
    /// Parses one frame. A parse failure is -32700; a JSON value that is not a JSON-RPC 2.0 message is -32600.
    pub(crate) fn parse(bytes: &[u8]) -> Result<Incoming, Rejected> {
        // The envelope read straight into its fields, without a map of them to take apart; anything it does not
        // take (a batch, a duplicate member, a member of the wrong type, an escaped `jsonrpc`) is read again as a
        // value, which says what is wrong, as it always did. The text is checked to be UTF-8 first, once: the
        // members the envelope skips are not checked as they are skipped.
        if let Ok(text) = std::str::from_utf8(bytes) {
            if let Some(incoming) = serde_json::from_str::<Members<'_>>(text).ok().and_then(Members::classify) {
                return Ok(incoming);
            }
        }
        let value: Value = serde_json::from_slice(bytes).map_err(|e| Rejected {
            id: None,
            error: Error::new(ErrorCode::PARSE_ERROR, format!("parse error: {e}")),
        })?;
        Incoming::from_value(value).map(Incoming::split_envelope)
    }

    /// The message with its 2026 envelope split off `params._meta`, as [`Incoming::parse`] gives it.
    fn split_envelope(self) -> Incoming {
        match self {
            Incoming::Request { id, method, mut params, envelope: None, arguments } => {
                let envelope = split_params(&mut params);
                Incoming::Request { id, method, params, envelope, arguments }
            }
            Incoming::Notification { method, mut params, envelope: None } => {
                let envelope = split_params(&mut params);
                Incoming::Notification { method, params, envelope }
            }
            other => other,
        }
    }

    /// The message as it was sent: the envelope put back into `params._meta`, the arguments into `params`.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn restore_envelope(self) -> Incoming {
        match self {
            Incoming::Request { id, method, mut params, envelope, arguments } => {
                if let Some(envelope) = envelope {
                    restore_params(&mut params, &envelope);
                }
                restore_arguments(&mut params, arguments);
                Incoming::Request { id, method, params, envelope: None, arguments: None }
            }
            Incoming::Notification { method, mut params, envelope: Some(envelope) } => {
                restore_params(&mut params, &envelope);
                Incoming::Notification { method, params, envelope: None }
            }
            other => other,
        }
    }

    pub(crate) fn from_value(value: Value) -> Result<Incoming, Rejected> {
        let invalid = |id: Option<RequestId>, msg: &str| Rejected {
            id,
            error: Error::new(ErrorCode::INVALID_REQUEST, format!("invalid request: {msg}")),
        };
        let mut object = match value {
            Value::Object(o) => o,
            Value::Array(_) => return Err(invalid(None, "JSON-RPC batches are not supported")),
            _ => return Err(invalid(None, "a message must be a JSON object")),
        };
        let id = match object.get("id") {
            None => None,
            Some(v) => match RequestId::from_value(v) {
                Some(id) => Some(id),
                None => return Err(invalid(None, "`id` must be a string or an integer")),
            },
        };
        if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return Err(invalid(id, "`jsonrpc` must be \"2.0\""));
        }
        let params = object.remove("params");
        if let Some(p) = &params {
            if !(p.is_object() || p.is_array()) {
                return Err(invalid(id, "`params` must be an object"));
            }
        }
        match object.remove("method") {
            Some(Value::String(method)) => Ok(match id {
                Some(id) => Incoming::Request { id, method, params, envelope: None, arguments: None },
                None => Incoming::Notification { method, params, envelope: None },
            }),
            Some(_) => Err(invalid(id, "`method` must be a string")),
            None => {
                let Some(id) = id else {
                    return Err(invalid(None, "a message needs a `method`, or an `id` with `result` or `error`"));
                };
                if let Some(result) = object.remove("result") {
                    Ok(Incoming::Response { id, outcome: Ok(result) })
                } else if let Some(error) = object.remove("error") {
                    Ok(Incoming::Response { id, outcome: Err(error) })
                } else {
                    Err(invalid(Some(id), "a response needs `result` or `error`"))
                }
            }
        }
    }
}

/// Splits the 2026 envelope off `params._meta` (read as values), as [`Incoming::parse`] does.
pub(crate) fn split_params(params: &mut Option<Value>) -> Option<RawEnvelope> {
    let Some(Value::Object(params)) = params else { return None };
    let Some(Value::Object(meta)) = params.get_mut("_meta") else { return None };
    let envelope = RawEnvelope::take_from(meta)?;
    if meta.is_empty() {
        params.remove("_meta");
    }
    Some(envelope)
}

/// Puts `arguments` kept as text back into `params`, as values.
pub(crate) fn restore_arguments(params: &mut Option<Value>, arguments: Option<Box<RawValue>>) {
    let Some(text) = arguments else { return };
    let params = params.get_or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(params) = params {
        // Text read as one JSON value: it reads back as one.
        params.insert("arguments".to_owned(), serde_json::from_str(text.get()).unwrap_or_default());
    }
}

/// A `serde_json` error as the error of the deserializer that read the text.
fn de_error<E: serde::de::Error>(e: serde_json::Error) -> E {
    E::custom(e)
}

/// Puts the 2026 envelope back into `params._meta`, as it was sent.
pub(crate) fn restore_params(params: &mut Option<Value>, envelope: &RawEnvelope) {
    let params = params.get_or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(params) = params {
        let meta = params.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(meta) = meta {
            envelope.restore(meta);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::protocol::{CallToolResult, Content, WireResult};

    /// The envelope read into its fields gives what reading the message as a value gives, message or error.
    #[test]
    fn a_message_is_read_as_it_is_read_as_a_value() {
        let cases: &[&str] = &[
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}"#,
            r#"{"jsonrpc":"2.0","id":"a","method":"ping"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/x","params":[1]}"#,
            r#"{"jsonrpc":"2.0","id":3,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":3,"result":null}"#,
            r#"{"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"no"}}"#,
            r#"{"jsonrpc":"2.0","id":3,"result":1,"error":2}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"m","result":1}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"m","extra":{"a":[1,2]}}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":null}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":7}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":null}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":"p"}"#,
            r#"{"jsonrpc":"2\u002e0","id":1,"method":"m"}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"m"}"#,
            r#"{"jsonrpc":2.0,"id":1,"method":"m"}"#,
            r#"{"id":1,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","method":"a","method":"b"}"#,
            r#"{"jsonrpc":"2.0","id":1}"#,
            r#"{"jsonrpc":"2.0"}"#,
            r#"[{"jsonrpc":"2.0","id":1,"method":"m"}]"#,
            r#""text""#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m""#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m\u00e9"}"#,
            // The 2026 envelope: split off `_meta`, which is left out when nothing else is in it.
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","_meta":{
                "io.modelcontextprotocol/protocolVersion":"2026-07-28",
                "io.modelcontextprotocol/clientCapabilities":{"roots":{}},"progressToken":"p"}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{
                "io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},
                "io.modelcontextprotocol/logLevel":"info"}}}"#,
            r#"{"jsonrpc":"2.0","method":"n","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":1}}}"#,
            // Not an envelope: kept whole.
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"io.modelcontextprotocol/logLevel":"info"}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":"text"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":null}}"#,
            // Read the slow way (a duplicate member), split all the same.
            r#"{"jsonrpc":"2.0","id":1,"id":1,"method":"m","params":{"_meta":{
                "io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#,
        ];
        // Not UTF-8, in a member the envelope skips and in one it reads.
        let not_utf8: [&[u8]; 2] = [
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"x\":\"\x98\"}",
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\x98\"}",
        ];
        for case in not_utf8 {
            let read = Incoming::parse(case).expect_err("not UTF-8");
            assert_eq!(read.error.code, ErrorCode::PARSE_ERROR, "{read:?}");
        }
        for case in cases {
            let read = Incoming::parse(case.as_bytes());
            let as_value = serde_json::from_slice::<Value>(case.as_bytes())
                .map_err(|_| ())
                .map(|v| Incoming::from_value(v).map(Incoming::split_envelope));
            // Put back, the envelope gives the message as sent.
            let sent = serde_json::from_str(case).map(Incoming::from_value);
            if let (Ok(read), Ok(Ok(Incoming::Request { params: b, .. }))) = (Incoming::parse(case.as_bytes()), sent) {
                let Incoming::Request { params: a, .. } = read.restore_envelope() else { panic!("{case}") };
                assert_eq!(a, b, "{case}");
            }
            // A `tools/call`'s arguments kept as text read as the values in `params`.
            let read = read.map(|a| match a {
                Incoming::Request { id, method, mut params, envelope, arguments } => {
                    restore_arguments(&mut params, arguments);
                    Incoming::Request { id, method, params, envelope, arguments: None }
                }
                other => other,
            });
            match (read, as_value) {
                (Ok(a), Ok(Ok(b))) => assert_eq!(format!("{a:?}"), format!("{b:?}"), "{case}"),
                (Err(a), Ok(Err(b))) => {
                    assert_eq!((format!("{:?}", a.id), a.error.message), (format!("{:?}", b.id), b.error.message))
                }
                (Err(a), Err(())) => assert_eq!(a.error.code, ErrorCode::PARSE_ERROR, "{case}"),
                (a, b) => panic!("{case}: read as {a:?}, as a value {b:?}"),
            }
        }
    }

    /// Only a `tools/call` keeps its `arguments` as text, and only an object of them; the last of two is the one.
    #[test]
    fn a_tool_call_keeps_its_arguments_as_text() {
        let arguments = |case: &str| match Incoming::parse(case.as_bytes()).expect(case) {
            Incoming::Request { params, arguments, .. } => {
                (arguments.map(|a| a.get().to_owned()), params.and_then(|p| p.get("arguments").cloned()))
            }
            other => panic!("{other:?}"),
        };
        let call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","arguments":{"text": "x"}}}"#;
        assert_eq!(arguments(call), (Some(r#"{"text": "x"}"#.to_owned()), None));
        let twice = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"a":1},"arguments":[2]}}"#;
        assert_eq!(arguments(twice), (None, Some(serde_json::json!([2]))));
        let twice = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":3,"arguments":{"a":1}}}"#;
        assert_eq!(arguments(twice), (Some(r#"{"a":1}"#.to_owned()), None));
        let null = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","arguments":null}}"#;
        assert_eq!(arguments(null), (None, Some(Value::Null)));
        let prompt = r#"{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"p","arguments":{"a":"b"}}}"#;
        assert_eq!(arguments(prompt), (None, Some(serde_json::json!({"a": "b"}))));
    }

    #[test]
    fn a_large_result_is_written_into_one_buffer_of_about_its_size() {
        let id = RequestId::Number(7);
        let plain = CallToolResult::success(vec![Content::text("x".repeat(1 << 20))]);
        let frame = Frame::result_sized(&id, &plain, plain.payload_len());
        assert_eq!(frame, Frame::result(&id, &plain));
        assert_eq!(frame.kind(), FrameKind::Result);
        let frame = frame.into_text();
        assert!(frame.capacity() <= frame.len() + frame.len() / 10, "{} for {}", frame.capacity(), frame.len());
        // Escapes make it longer than its payload: still the same frame.
        let escaped = CallToolResult::success(vec![Content::text("\"é\n\u{1}".repeat(1 << 16))]);
        assert_eq!(Frame::result_sized(&id, &escaped, escaped.payload_len()), Frame::result(&id, &escaped));
    }

    #[test]
    fn a_frame_knows_what_it_is() {
        let id = RequestId::Number(1);
        assert_eq!(Frame::error(Some(&id), &Error::invalid_params("no")).kind(), FrameKind::Error(-32602));
        assert_eq!(
            Frame::notification("notifications/progress", &serde_json::json!({})).kind(),
            FrameKind::Notification
        );
        assert_eq!(Frame::request(&id, "roots/list", &serde_json::json!({})).kind(), FrameKind::Request);
        // A result that cannot be serialized is answered as an error, and says so.
        struct Unserializable;
        impl Serialize for Unserializable {
            fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
                Err(serde::ser::Error::custom("no"))
            }
        }
        assert_eq!(Frame::result(&id, &Unserializable).kind(), FrameKind::Error(-32603));
    }
}

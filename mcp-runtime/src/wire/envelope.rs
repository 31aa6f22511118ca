//! The 2026-07-28 envelope of a request (`params._meta`'s protocol version, client capabilities, client info and log
//! level), kept as the text it was sent as.
//!
//! A 2026 client sends the same envelope with every request. Building it as a tree of values on each request, only
//! to take it apart again, was a third of what a 2026 call cost to read. It is read here as text, in the same pass
//! as the rest of the message ([`crate::wire::jsonrpc::Incoming::parse`]), and the 2026 front reads the text: the
//! client's info and capabilities of a text it has seen before are the ones it built then.

use std::fmt;
use std::ops::Range;

use serde::de::{DeserializeSeed, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// `_meta` keys of the 2026 envelope.
pub(crate) const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
pub(crate) const META_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
pub(crate) const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
pub(crate) const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";

/// The keys kept as text, in the order of [`RawEnvelope::parts`].
const KEYS: [&str; 4] = [META_VERSION, META_CAPABILITIES, META_CLIENT_INFO, META_LOG_LEVEL];

/// The envelope's members as sent: each one's JSON text (no whitespace around it) in one buffer.
#[derive(Clone, Default, PartialEq, Eq)]
pub(crate) struct RawEnvelope {
    text: String,
    parts: [Option<Range<u32>>; 4],
}

impl fmt::Debug for RawEnvelope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut map = f.debug_map();
        for (i, key) in KEYS.iter().enumerate() {
            if let Some(text) = self.part(i) {
                map.entry(key, &text);
            }
        }
        map.finish()
    }
}

impl RawEnvelope {
    /// No member at all.
    #[cfg(feature = "http")]
    pub(crate) const EMPTY: RawEnvelope = RawEnvelope { text: String::new(), parts: [None, None, None, None] };

    fn part(&self, i: usize) -> Option<&str> {
        self.parts[i].as_ref().map(|r| &self.text[r.start as usize..r.end as usize])
    }

    fn set(&mut self, i: usize, json: &str) {
        let start = self.text.len();
        self.text.push_str(json);
        // A message is far below 4 GiB (the transports' body limits); a longer one keeps its first part.
        if let (Ok(start), Ok(end)) = (u32::try_from(start), u32::try_from(self.text.len())) {
            self.parts[i] = Some(start..end);
        }
    }

    /// `io.modelcontextprotocol/protocolVersion`, as JSON text.
    pub(crate) fn version(&self) -> Option<&str> {
        self.part(0)
    }

    /// `io.modelcontextprotocol/clientCapabilities`, as JSON text.
    pub(crate) fn capabilities(&self) -> Option<&str> {
        self.part(1)
    }

    /// `io.modelcontextprotocol/clientInfo`, as JSON text.
    pub(crate) fn client_info(&self) -> Option<&str> {
        self.part(2)
    }

    /// `io.modelcontextprotocol/logLevel`, as JSON text.
    pub(crate) fn log_level(&self) -> Option<&str> {
        self.part(3)
    }

    /// Whether it makes the message one of the 2026 era: a version, capabilities or client info (a log level
    /// alone does not).
    fn marks_2026(&self) -> bool {
        self.parts[..3].iter().any(Option::is_some)
    }

    /// Takes the envelope's keys out of a `_meta` read as values (messages read the slow way, see
    /// [`Incoming::parse`](crate::wire::jsonrpc::Incoming::parse)); `None`, leaving `_meta` as it was, when none
    /// marks the 2026 era.
    pub(crate) fn take_from(meta: &mut Map<String, Value>) -> Option<RawEnvelope> {
        if !KEYS[..3].iter().any(|k| meta.contains_key(*k)) {
            return None;
        }
        let mut envelope = RawEnvelope::default();
        for (i, key) in KEYS.iter().enumerate() {
            if let Some(value) = meta.remove(*key) {
                envelope.set(i, &value.to_string());
            }
        }
        Some(envelope)
    }

    /// Puts the envelope's keys back into `_meta`, as values: the message as it was sent.
    pub(crate) fn restore(&self, meta: &mut Map<String, Value>) {
        for (i, key) in KEYS.iter().enumerate() {
            if let Some(value) = self.part(i).and_then(|text| serde_json::from_str(text).ok()) {
                meta.insert((*key).to_owned(), value);
            }
        }
    }
}

/// The string a JSON text holds, if it is one (borrowed when it has no escapes).
pub(crate) fn json_string(text: &str) -> Option<std::borrow::Cow<'_, str>> {
    // The usual case, a string of no escapes or control characters (the text is one JSON value), read as it is.
    if let Some(inner) = text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
        if !inner.bytes().any(|b| b == b'\\' || b == b'"' || b < 0x20) {
            return Some(inner.into());
        }
    }
    serde_json::from_str::<String>(text).ok().map(Into::into)
}

/// Reads an object's key: the index of one of `known` (without copying it), or the key.
pub(crate) struct KnownKey(pub &'static [&'static str]);

impl<'de> DeserializeSeed<'de> for KnownKey {
    type Value = Result<usize, String>;

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl Visitor<'_> for KnownKey {
    type Value = Result<usize, String>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }

    fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<Self::Value, E> {
        Ok(self.0.iter().position(|k| *k == key).ok_or_else(|| key.to_owned()))
    }

    fn visit_string<E: serde::de::Error>(self, key: String) -> Result<Self::Value, E> {
        Ok(match self.0.iter().position(|k| *k == key) {
            Some(i) => Ok(i),
            None => Err(key),
        })
    }
}

/// Reads an object's `_meta` in one pass: the envelope's keys as text, the others as values.
pub(crate) struct SplitMeta;

/// What [`SplitMeta`] read: the request's own `_meta` (every key when nothing marks the 2026 era), and the
/// envelope when something does.
pub(crate) struct Split {
    pub own: Map<String, Value>,
    pub envelope: Option<RawEnvelope>,
}

impl<'de> DeserializeSeed<'de> for SplitMeta {
    type Value = Split;

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<Split, D::Error> {
        // Anything but an object fails here, and the message is read the slow way (as a value), which keeps it.
        deserializer.deserialize_map(SplitMeta)
    }
}

impl<'de> Visitor<'de> for SplitMeta {
    type Value = Split;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Split, A::Error> {
        // Room for a usual envelope (a version, small capabilities, a client's info) at once.
        let mut envelope = RawEnvelope { text: String::with_capacity(256), ..RawEnvelope::default() };
        let mut own = Map::new();
        while let Some(key) = map.next_key_seed(KnownKey(&KEYS))? {
            match key {
                Ok(i) => envelope.set(i, map.next_value::<&RawValue>()?.get()),
                Err(key) => {
                    own.insert(key, map.next_value::<Value>()?);
                }
            }
        }
        if envelope.marks_2026() {
            return Ok(Split { own, envelope: Some(envelope) });
        }
        // Not an envelope (a log level alone is the request's own `_meta`).
        envelope.restore(&mut own);
        Ok(Split { own, envelope: None })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(text: &str) -> Split {
        SplitMeta.deserialize(&mut serde_json::Deserializer::from_str(text)).expect("an object")
    }

    #[test]
    fn envelope_keys_are_kept_as_text_and_the_rest_as_values() {
        let read = split(
            r#"{"progressToken":7,"io.modelcontextprotocol/protocolVersion":"2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {"sampling": {}},
                "io.modelcontextprotocol/logLevel":"info"}"#,
        );
        let envelope = read.envelope.expect("an envelope");
        assert_eq!(envelope.version(), Some(r#""2026-07-28""#));
        assert_eq!(envelope.capabilities(), Some(r#"{"sampling": {}}"#));
        assert_eq!((envelope.client_info(), envelope.log_level()), (None, Some(r#""info""#)));
        assert_eq!(Value::Object(read.own), serde_json::json!({"progressToken": 7}));
    }

    #[test]
    fn a_log_level_alone_is_not_an_envelope() {
        let read = split(r#"{"io.modelcontextprotocol/logLevel":"info","k":1}"#);
        assert!(read.envelope.is_none());
        assert_eq!(Value::Object(read.own), serde_json::json!({"io.modelcontextprotocol/logLevel": "info", "k": 1}));
    }

    #[test]
    fn taken_from_values_and_restored_gives_the_same_members() {
        let original = serde_json::json!({
            META_VERSION: "2026-07-28", META_CAPABILITIES: {}, META_CLIENT_INFO: {"name": "c", "version": "1"}, "x": [1]
        });
        let Value::Object(mut meta) = original.clone() else { unreachable!() };
        let envelope = RawEnvelope::take_from(&mut meta).expect("an envelope");
        assert_eq!(Value::Object(meta.clone()), serde_json::json!({"x": [1]}));
        assert_eq!(envelope.client_info(), Some(r#"{"name":"c","version":"1"}"#));
        envelope.restore(&mut meta);
        assert_eq!(Value::Object(meta), original);
        assert!(RawEnvelope::take_from(&mut Map::new()).is_none());
    }

    #[test]
    fn a_json_string_is_read_borrowed_when_it_can_be() {
        assert!(matches!(json_string(r#""2026-07-28""#), Some(std::borrow::Cow::Borrowed("2026-07-28"))));
        assert_eq!(json_string(r#""a\"b""#).as_deref(), Some("a\"b"));
        assert_eq!(json_string(r#""\u0041""#).as_deref(), Some("A"));
        for not_one in ["7", "{}", r#"""#, r#""a"b""#, "null"] {
            assert_eq!(json_string(not_one), None, "{not_one}");
        }
    }
}

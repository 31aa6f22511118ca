//! [`Arguments`]: what a handler reads its arguments from, kept as the request's text until something asks for
//! values.
//!
//! A `tools/call`'s `arguments` object used to be built into a tree of values as the message was read (a map, a
//! `String` per key, a value per argument), only for the handler's glue to take each value out again and convert
//! it. Now the message's reader keeps the object as the JSON text it was sent as, and the glue deserializes each
//! argument straight from that text. A tree is built only when something asks for one: a middleware layer
//! ([`Request::arguments`](crate::middleware::Request::arguments)), a hook, a hand-written handler that reads the
//! map, the relay of a mounted server's tool.

use std::fmt;
use std::sync::OnceLock;

use serde::de::{DeserializeOwned, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde::ser::{Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// The arguments of one call: a `tools/call`'s `arguments` object, a prompt's arguments, a resource template's
/// variables (as strings), or a custom method's whole `params`.
///
/// Read as a map of values with [`as_map`](Arguments::as_map) (built on first use, when the call came as text) or
/// taken with [`into_map`](Arguments::into_map); made from a map with `From`. The handlers `#[mcp::tool]` generates
/// read each argument straight from the request's text instead, with no map in between.
///
/// ```
/// use mcp::handler::Arguments;
/// use serde_json::{json, Map, Value};
///
/// let mut map = Map::new();
/// map.insert("text".to_owned(), json!("hi"));
/// let mut args = Arguments::from(map);
/// assert_eq!(args.as_map()["text"], "hi");
/// args.as_map_mut().insert("loud".to_owned(), Value::Bool(true));
/// assert_eq!(serde_json::to_value(&args).unwrap(), json!({"text": "hi", "loud": true}));
/// assert!(Arguments::default().as_map().is_empty());
/// ```
#[derive(Default)]
pub struct Arguments {
    /// The object as sent, while no map has been made of it.
    text: Option<Box<RawValue>>,
    /// The object as values: made from `text` when first asked for, after which it is what the arguments are.
    map: OnceLock<Map<String, Value>>,
}

impl Arguments {
    /// Arguments kept as the JSON text of an object, as a request sent them. The caller has checked that the text
    /// is an object.
    pub(crate) fn from_text(text: Box<RawValue>) -> Arguments {
        debug_assert!(text.get().starts_with('{'), "arguments are an object");
        Arguments { text: Some(text), map: OnceLock::new() }
    }

    /// The arguments as a map of values (made from the request's text the first time it is asked for).
    pub fn as_map(&self) -> &Map<String, Value> {
        self.map.get_or_init(|| match &self.text {
            // Text the message's reader checked to be an object: it reads back as one.
            Some(text) => serde_json::from_str(text.get()).unwrap_or_default(),
            None => Map::new(),
        })
    }

    /// The arguments as a map of values, to change.
    pub fn as_map_mut(&mut self) -> &mut Map<String, Value> {
        self.as_map();
        // The map is what the arguments are from now on.
        self.text = None;
        self.map.get_mut().expect("made just above")
    }

    /// The arguments as a map of values.
    pub fn into_map(mut self) -> Map<String, Value> {
        self.as_map_mut();
        self.map.take().unwrap_or_default()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        match (self.map.get(), &self.text) {
            (Some(map), _) => map.is_empty(),
            (None, Some(text)) => text.get().bytes().all(|b| matches!(b, b'{' | b'}' | b' ' | b'\t' | b'\n' | b'\r')),
            (None, None) => true,
        }
    }

    /// Reads the argument `name` into `T`, taking it out: from the text when there is no map, with no value tree
    /// made. `None` when it is not there.
    pub(crate) fn take<T: DeserializeOwned>(&mut self, name: &str) -> Option<Result<T, String>> {
        if let Some(map) = self.map.get_mut() {
            let value = map.remove(name)?;
            return Some(serde_json::from_value(value).map_err(|e| e.to_string()));
        }
        let text = self.text.as_ref()?;
        let found = Find(name).deserialize(&mut serde_json::Deserializer::from_str(text.get())).ok()??;
        Some(serde_json::from_str(found.get()).map_err(|e| without_position(&e)))
    }

    /// Reads `T` from the arguments' members that `keep` accepts, borrowed: from the text when there is no map.
    pub(crate) fn read_members<T: DeserializeOwned>(&self, keep: impl Fn(&str) -> bool) -> Result<T, String> {
        if let (None, Some(text)) = (self.map.get(), &self.text) {
            let members = Members.deserialize(&mut serde_json::Deserializer::from_str(text.get()));
            // Text the message's reader checked to be an object: it reads back as one.
            let members = members.map_err(|e| without_position(&e))?;
            let kept = members.into_iter().filter(|(k, _)| keep(k));
            let deserializer = serde::de::value::MapDeserializer::<_, serde_json::Error>::new(kept);
            return T::deserialize(deserializer).map_err(|e| without_position(&e));
        }
        let kept = self.as_map().iter().filter(|(k, _)| keep(k)).map(|(k, v)| (k.as_str(), v));
        let deserializer = serde::de::value::MapDeserializer::<_, serde_json::Error>::new(kept);
        T::deserialize(deserializer).map_err(|e| e.to_string())
    }
}

impl From<Map<String, Value>> for Arguments {
    fn from(map: Map<String, Value>) -> Arguments {
        Arguments { text: None, map: OnceLock::from(map) }
    }
}

impl Clone for Arguments {
    fn clone(&self) -> Arguments {
        match self.map.get() {
            Some(map) => Arguments::from(map.clone()),
            None => Arguments { text: self.text.clone(), map: OnceLock::new() },
        }
    }
}

impl Serialize for Arguments {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match (self.map.get(), &self.text) {
            (Some(map), _) => map.serialize(serializer),
            (None, Some(text)) => text.serialize(serializer),
            (None, None) => Map::new().serialize(serializer),
        }
    }
}

impl fmt::Debug for Arguments {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.map.get(), &self.text) {
            (Some(map), _) => map.fmt(f),
            (None, Some(text)) => f.write_str(text.get()),
            (None, None) => f.write_str("{}"),
        }
    }
}

impl PartialEq for Arguments {
    fn eq(&self, other: &Arguments) -> bool {
        self.as_map() == other.as_map()
    }
}

/// A `serde_json` error's message without the position it names in the text (` at line 1 column 7`): an argument's
/// text is a part of the request, so the position would point at nothing the caller sent as such.
fn without_position(e: &serde_json::Error) -> String {
    let message = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    match message.strip_suffix(&suffix) {
        Some(message) => message.to_owned(),
        None => message,
    }
}

/// Finds the text of one member of an object (the last one of that name, as a map of values keeps).
struct Find<'n>(&'n str);

impl<'de> DeserializeSeed<'de> for Find<'_> {
    type Value = Option<&'de RawValue>;

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Find<'_> {
    type Value = Option<&'de RawValue>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut found = None;
        while let Some(key) = map.next_key::<Key<'de>>()? {
            if key.is(self.0) {
                found = Some(map.next_value::<&'de RawValue>()?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

/// An object's members as their texts, borrowed.
struct Members;

impl<'de> DeserializeSeed<'de> for Members {
    type Value = Vec<(std::borrow::Cow<'de, str>, &'de RawValue)>;

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Members {
    type Value = Vec<(std::borrow::Cow<'de, str>, &'de RawValue)>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut members: Vec<(std::borrow::Cow<'de, str>, &'de RawValue)> = Vec::new();
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            let value = map.next_value::<&'de RawValue>()?;
            // The last of a name wins, as in a map of values.
            match members.iter_mut().find(|(k, _)| *k == key) {
                Some(member) => member.1 = value,
                None => members.push((key, value)),
            }
        }
        Ok(members)
    }
}

/// An object's key: borrowed from the text unless it has escapes.
struct Key<'de>(std::borrow::Cow<'de, str>);

impl Key<'_> {
    fn is(&self, name: &str) -> bool {
        self.0 == name
    }
}

impl<'de> serde::Deserialize<'de> for Key<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Key<'de>, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E: serde::de::Error>(self, key: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(key.into()))
            }
            fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<Key<'de>, E> {
                Ok(Key(key.to_owned().into()))
            }
            fn visit_string<E: serde::de::Error>(self, key: String) -> Result<Key<'de>, E> {
                Ok(Key(key.into()))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(json: &str) -> Arguments {
        Arguments::from_text(RawValue::from_string(json.to_owned()).unwrap())
    }

    #[test]
    fn an_argument_is_read_from_the_text_as_from_the_map() {
        let json = r#"{"n": 3, "s": "a\"b", "s": "last", "o": {"x": [1, null]}, "e\u0073c": true}"#;
        let map: Map<String, Value> = serde_json::from_str(json).unwrap();
        for mut args in [text(json), Arguments::from(map)] {
            assert_eq!(args.take::<u8>("n"), Some(Ok(3)));
            assert_eq!(args.take::<String>("s"), Some(Ok("last".to_owned())));
            assert_eq!(args.take::<Value>("o"), Some(Ok(json!({"x": [1, null]}))));
            assert_eq!(args.take::<bool>("esc"), Some(Ok(true)));
            assert_eq!(args.take::<bool>("missing"), None);
        }
    }

    #[test]
    fn a_wrong_type_reads_as_the_same_message_from_text_and_map() {
        let json = r#"{"n": "three", "big": 300}"#;
        let (mut a, mut b) = (text(json), Arguments::from(serde_json::from_str::<Map<String, Value>>(json).unwrap()));
        assert_eq!(a.take::<u32>("n"), b.take::<u32>("n"));
        assert_eq!(a.take::<u8>("big"), b.take::<u8>("big"));
        assert_eq!(text(json).take::<u32>("n"), Some(Err(r#"invalid type: string "three", expected u32"#.to_owned())));
    }

    #[test]
    fn members_are_read_borrowed_from_the_text() {
        #[derive(serde::Deserialize, Debug, PartialEq)]
        struct Page {
            page: u32,
            size: Option<u32>,
        }
        let json = r#"{"page": 2, "query": "x", "page": 4}"#;
        let keep = |k: &str| k != "query";
        assert_eq!(text(json).read_members::<Page>(keep), Ok(Page { page: 4, size: None }));
        let map = Arguments::from(serde_json::from_str::<Map<String, Value>>(json).unwrap());
        assert_eq!(map.read_members::<Page>(keep), Ok(Page { page: 4, size: None }));
    }

    #[test]
    fn the_map_is_made_once_and_then_is_what_the_arguments_are() {
        let mut args = text(r#"{"a": 1}"#);
        assert!(!args.is_empty());
        assert_eq!(format!("{args:?}"), r#"{"a": 1}"#);
        args.as_map_mut().insert("b".to_owned(), json!(2));
        assert_eq!(args.take::<u8>("b"), Some(Ok(2)));
        assert_eq!(serde_json::to_value(&args).unwrap(), json!({"a": 1}));
        assert_eq!(args.clone().into_map(), *args.as_map());
        assert!(text("{ }").is_empty());
        assert_eq!(serde_json::to_string(&text(r#"{"a":[1]}"#)).unwrap(), r#"{"a":[1]}"#);
    }
}

//! [`Name`]: the text a definition is known by (a tool's or prompt's name, a resource's URI, where it was defined),
//! written in the program (`const`, no allocation) or made at run time (shared, freed with the last definition that
//! holds it: a gateway relaying upstreams whose tools change over weeks keeps only the names it serves now).

use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::sync::Arc;

/// The text a definition is known by: a literal in the program, or text made while it runs (the names
/// [`mcp::compose`](crate::compose) takes from upstreams). Cloning it copies a pointer, or counts one more holder of
/// shared text; it compares, hashes and orders as its text.
///
/// ```
/// use mcp::Name;
///
/// const SEARCH: Name = Name::new("search");
/// let relayed = Name::from(format!("shop_{}", "order"));
/// assert_eq!(SEARCH, "search");
/// assert_eq!(relayed.as_str(), "shop_order");
/// assert!(relayed > SEARCH);
/// ```
#[derive(Clone)]
pub struct Name(Repr);

#[derive(Clone)]
enum Repr {
    Literal(&'static str),
    Shared(Arc<str>),
}

impl Name {
    /// A name written in the program; usable in a `const`.
    pub const fn new(text: &'static str) -> Name {
        Name(Repr::Literal(text))
    }

    /// Its text.
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Literal(text) => text,
            Repr::Shared(text) => text,
        }
    }

    /// The text when it is a literal of the program (what `'static` label sets can hold as it is).
    pub(crate) fn literal(&self) -> Option<&'static str> {
        match self.0 {
            Repr::Literal(text) => Some(text),
            Repr::Shared(_) => None,
        }
    }
}

impl Default for Name {
    fn default() -> Name {
        Name::new("")
    }
}

impl Deref for Name {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Name {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for Name {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl From<&'static str> for Name {
    fn from(text: &'static str) -> Name {
        Name::new(text)
    }
}

impl From<String> for Name {
    fn from(text: String) -> Name {
        Name(Repr::Shared(Arc::from(text)))
    }
}

impl From<Arc<str>> for Name {
    fn from(text: Arc<str>) -> Name {
        Name(Repr::Shared(text))
    }
}

impl From<Name> for String {
    fn from(name: Name) -> String {
        name.as_str().to_owned()
    }
}

impl PartialEq for Name {
    fn eq(&self, other: &Name) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Name {}

impl PartialEq<str> for Name {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Name {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<Name> for &str {
    fn eq(&self, other: &Name) -> bool {
        *self == other.as_str()
    }
}

impl PartialOrd for Name {
    fn partial_cmp(&self, other: &Name) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Name {
    fn cmp(&self, other: &Name) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl Hash for Name {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state)
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl serde::Serialize for Name {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::Name;
    use std::collections::HashMap;

    #[test]
    fn a_name_compares_hashes_and_orders_as_its_text() {
        let literal = Name::new("search");
        let shared = Name::from(String::from("search"));
        assert_eq!(literal, shared);
        let mut map = HashMap::new();
        map.insert(shared.clone(), 1);
        assert_eq!(map.get("search"), Some(&1));
        assert_eq!(map.get(&literal), Some(&1));
        assert!(Name::new("a") < Name::from(String::from("b")));
        assert_eq!(literal.literal(), Some("search"));
        assert_eq!(shared.literal(), None);
    }

    #[test]
    fn shared_text_is_freed_with_its_last_holder() {
        let text: std::sync::Arc<str> = std::sync::Arc::from("relayed_tool");
        let name = Name::from(text.clone());
        let copy = name.clone();
        assert_eq!(std::sync::Arc::strong_count(&text), 3);
        drop((name, copy));
        assert_eq!(std::sync::Arc::strong_count(&text), 1);
    }
}

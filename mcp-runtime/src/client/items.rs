//! The items of lists, typed: [`Tool`], [`Prompt`], [`Resource`] and [`ResourceTemplate`], each read from the
//! JSON the server wrote and keeping it.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::Error;
use crate::wire::protocol::{Annotations, Icon, PromptArgument, ToolAnnotations};
use crate::wire::task::TaskSupport;

/// What a list holds, for [`Client::list`](super::Client::list): [`Tool`], [`Prompt`], [`Resource`] or
/// [`ResourceTemplate`].
pub trait ListItem: sealed::Sealed + Sized + Send + 'static {
    /// The list method: `tools/list`, `prompts/list`, `resources/list` or `resources/templates/list`.
    const METHOD: &'static str;
}

mod sealed {
    /// Reads an item from the JSON the server wrote. Sealed: only this module's items are list items.
    pub trait Sealed: Sized {
        fn from_raw(raw: serde_json::Value) -> Result<Self, super::Error>;
    }
}

/// The fields of one item. A required field that is missing or does not fit fails the item; an optional one that
/// does not fit reads as absent (it is still in the raw JSON), so that one odd icon does not cost a whole tool.
struct Fields<'a> {
    raw: &'a Value,
    what: &'static str,
}

impl Fields<'_> {
    fn required<T: DeserializeOwned>(&self, key: &str) -> Result<T, Error> {
        let what = match self.raw["name"].as_str() {
            Some(name) => format!("{} ({name:?})", self.what),
            None => self.what.to_owned(),
        };
        let value = self.raw.get(key).filter(|v| !v.is_null());
        let value = value.ok_or_else(|| Error::Protocol(format!("a {what} without `{key}`")))?;
        T::deserialize(value).map_err(|e| Error::Protocol(format!("the `{key}` of a {what} does not fit: {e}")))
    }

    fn optional<T: DeserializeOwned>(&self, key: &str) -> Option<T> {
        let value = self.raw.get(key).filter(|v| !v.is_null())?;
        T::deserialize(value)
            .map_err(|e| tracing::debug!(item = self.what, key, error = %e, "an optional field that does not fit"))
            .ok()
    }
}

/// A tool, as `tools/list` describes it.
///
/// The fields are what the 2025-11-25 and 2026-07-28 schemas define; [`Tool::raw`] is the JSON as the server wrote
/// it, with anything else it said.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Tool {
    /// Programmatic name: what [`Client::call_tool`](super::Client::call_tool) takes.
    pub name: String,
    /// Display name.
    pub title: Option<String>,
    /// What it does, for the model.
    pub description: Option<String>,
    /// The JSON Schema of its arguments (an object schema).
    pub input_schema: Value,
    /// The JSON Schema of its `structuredContent`, if it has one.
    pub output_schema: Option<Value>,
    /// Behaviour hints (untrusted: the server says them).
    pub annotations: Option<ToolAnnotations>,
    /// Whether it can run as a task: `execution.taskSupport` (2025-11-25; the 2026-07-28 era has no such field, the
    /// Tasks extension decides per request).
    pub task_support: Option<TaskSupport>,
    /// Icons.
    pub icons: Vec<Icon>,
    /// Its `_meta`.
    pub meta: Option<Map<String, Value>>,
    raw: Value,
}

impl sealed::Sealed for Tool {
    fn from_raw(raw: Value) -> Result<Tool, Error> {
        let f = Fields { raw: &raw, what: "tool" };
        let task_support = match raw["execution"]["taskSupport"].as_str() {
            Some("forbidden") => Some(TaskSupport::Forbidden),
            Some("optional") => Some(TaskSupport::Optional),
            Some("required") => Some(TaskSupport::Required),
            _ => None,
        };
        Ok(Tool {
            name: f.required("name")?,
            title: f.optional("title"),
            description: f.optional("description"),
            input_schema: f.required("inputSchema")?,
            output_schema: f.optional("outputSchema"),
            annotations: f.optional("annotations"),
            task_support,
            icons: f.optional("icons").unwrap_or_default(),
            meta: f.optional("_meta"),
            raw,
        })
    }
}

/// A prompt, as `prompts/list` describes it; [`Prompt::raw`] is the JSON as the server wrote it.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Prompt {
    /// Programmatic name: what [`Client::get_prompt`](super::Client::get_prompt) takes.
    pub name: String,
    /// Display name.
    pub title: Option<String>,
    /// What it is for.
    pub description: Option<String>,
    /// Its arguments.
    pub arguments: Vec<PromptArgument>,
    /// Icons.
    pub icons: Vec<Icon>,
    /// Its `_meta`.
    pub meta: Option<Map<String, Value>>,
    raw: Value,
}

impl sealed::Sealed for Prompt {
    fn from_raw(raw: Value) -> Result<Prompt, Error> {
        let f = Fields { raw: &raw, what: "prompt" };
        Ok(Prompt {
            name: f.required("name")?,
            title: f.optional("title"),
            description: f.optional("description"),
            arguments: f.optional("arguments").unwrap_or_default(),
            icons: f.optional("icons").unwrap_or_default(),
            meta: f.optional("_meta"),
            raw,
        })
    }
}

/// A resource, as `resources/list` describes it; [`Resource::raw`] is the JSON as the server wrote it.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Resource {
    /// Its URI: what [`Client::read_resource`](super::Client::read_resource) takes.
    pub uri: String,
    /// Programmatic name.
    pub name: String,
    /// Display name.
    pub title: Option<String>,
    /// What it is.
    pub description: Option<String>,
    /// Its MIME type.
    pub mime_type: Option<String>,
    /// Its size in bytes, if the server knows it.
    pub size: Option<u64>,
    /// Hints for the client (audience, priority, last change).
    pub annotations: Option<Annotations>,
    /// Icons.
    pub icons: Vec<Icon>,
    /// Its `_meta`.
    pub meta: Option<Map<String, Value>>,
    raw: Value,
}

impl sealed::Sealed for Resource {
    fn from_raw(raw: Value) -> Result<Resource, Error> {
        let f = Fields { raw: &raw, what: "resource" };
        Ok(Resource {
            uri: f.required("uri")?,
            name: f.required("name")?,
            title: f.optional("title"),
            description: f.optional("description"),
            mime_type: f.optional("mimeType"),
            size: f.optional("size"),
            annotations: f.optional("annotations"),
            icons: f.optional("icons").unwrap_or_default(),
            meta: f.optional("_meta"),
            raw,
        })
    }
}

/// A resource template, as `resources/templates/list` describes it; [`ResourceTemplate::raw`] is the JSON as the
/// server wrote it.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ResourceTemplate {
    /// The RFC 6570 URI template (`books://{title}`): a URI it matches is what
    /// [`Client::read_resource`](super::Client::read_resource) takes.
    pub uri_template: String,
    /// Programmatic name.
    pub name: String,
    /// Display name.
    pub title: Option<String>,
    /// What it is.
    pub description: Option<String>,
    /// The MIME type of what it names.
    pub mime_type: Option<String>,
    /// Hints for the client.
    pub annotations: Option<Annotations>,
    /// Icons.
    pub icons: Vec<Icon>,
    /// Its `_meta`.
    pub meta: Option<Map<String, Value>>,
    raw: Value,
}

impl sealed::Sealed for ResourceTemplate {
    fn from_raw(raw: Value) -> Result<ResourceTemplate, Error> {
        let f = Fields { raw: &raw, what: "resource template" };
        Ok(ResourceTemplate {
            uri_template: f.required("uriTemplate")?,
            name: f.required("name")?,
            title: f.optional("title"),
            description: f.optional("description"),
            mime_type: f.optional("mimeType"),
            annotations: f.optional("annotations"),
            icons: f.optional("icons").unwrap_or_default(),
            meta: f.optional("_meta"),
            raw,
        })
    }
}

/// What every list item has beside its fields: the name to show (`title`, else what `$fallback` gives, else
/// `name`), its JSON as the server wrote it, its list method, and `TryFrom<Value>`.
macro_rules! list_item {
    ($item:ident, $method:literal) => {
        list_item!($item, $method, "`title`, else `name`", |_item| None);
    };
    ($item:ident, $method:literal, $precedence:literal, |$this:ident| $fallback:expr) => {
        impl $item {
            #[doc = concat!("The name to show: ", $precedence, ".")]
            pub fn display_name(&self) -> &str {
                let $this = self;
                self.title.as_deref().or_else(|| $fallback).unwrap_or(&self.name)
            }

            /// The JSON as the server wrote it.
            pub fn raw(&self) -> &Value {
                &self.raw
            }

            /// The JSON as the server wrote it, taken.
            pub fn into_raw(self) -> Value {
                self.raw
            }
        }

        impl ListItem for $item {
            const METHOD: &'static str = $method;
        }

        /// Reads an item from JSON (an item of a page from [`Client::list_page`](super::Client::list_page), say).
        /// A required field that is missing or does not fit is an [`Error::Protocol`]; an optional one that does
        /// not fit reads as absent.
        impl TryFrom<Value> for $item {
            type Error = Error;

            fn try_from(raw: Value) -> Result<Self, Error> {
                <$item as sealed::Sealed>::from_raw(raw)
            }
        }
    };
}

list_item!(
    Tool,
    "tools/list",
    "`title`, else `annotations.title`, else `name` (the precedence the specification gives)",
    |tool| tool.annotations.as_ref().and_then(|a| a.title.as_deref())
);
list_item!(Prompt, "prompts/list");
list_item!(Resource, "resources/list");
list_item!(ResourceTemplate, "resources/templates/list");

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{Prompt, Resource, ResourceTemplate, Tool};
    use crate::client::Error;
    use crate::wire::task::TaskSupport;

    #[test]
    fn a_tool_reads_every_field_of_the_schema_and_keeps_its_json() {
        let raw = json!({
            "name": "add", "title": "Adder", "description": "Adds.",
            "inputSchema": {"type": "object", "properties": {"a": {"type": "integer"}}},
            "outputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": true, "title": "Add"},
            "execution": {"taskSupport": "optional"},
            "icons": [{"src": "https://example.com/a.png", "sizes": ["48x48"], "theme": "dark"}],
            "_meta": {"example.com/owner": "ada"},
            "x-extra": 1,
        });
        let tool = Tool::try_from(raw.clone()).unwrap();
        assert_eq!((tool.name.as_str(), tool.display_name()), ("add", "Adder"));
        assert_eq!(tool.annotations.as_ref().and_then(|a| a.read_only_hint), Some(true));
        assert_eq!(tool.task_support, Some(TaskSupport::Optional));
        assert_eq!(tool.icons[0].theme.as_deref(), Some("dark"));
        assert_eq!(tool.meta.as_ref().unwrap()["example.com/owner"], "ada");
        assert_eq!(tool.output_schema, Some(json!({"type": "object"})));
        assert_eq!(tool.raw(), &raw, "unknown fields stay in the raw JSON");
    }

    #[test]
    fn a_missing_required_field_fails_an_item_and_a_misfit_optional_one_reads_as_absent() {
        assert!(matches!(Tool::try_from(json!({"name": "x"})), Err(Error::Protocol(_))));
        assert!(Resource::try_from(json!({"name": "x"})).is_err());
        assert!(ResourceTemplate::try_from(json!({"uriTemplate": "a://{x}"})).is_err());
        let raw = json!({"name": "p", "title": 7, "icons": [{"src": "a", "sizes": "48x48"}]});
        let prompt = Prompt::try_from(raw.clone()).unwrap();
        assert_eq!((prompt.display_name(), prompt.title.as_deref(), prompt.icons.len()), ("p", None, 0));
        assert_eq!(prompt.raw(), &raw);
    }
}

//! Resources and resource templates: the static definition a `#[mcp::resource]` emits, and the conversion of
//! return values into `resources/read` results.

use std::fmt::Display;

use crate::base::name::Name;
use crate::context::Context;
use crate::handler::prompt::{error_of, Completer};
use crate::handler::tool::{Handler, Injected};
use crate::wire::error::Error;
use crate::wire::protocol::{
    Annotations, CacheHint, CacheScope, Icon, ReadResourceResult, Resource, ResourceContents, ResourceTemplate, Role,
};

/// How a resource is read.
pub type ResourceHandler = Handler<ReadResourceResult>;

/// Lists, at run time, the resources a template names (files, rows, documents).
pub type Lister = fn(&Context) -> Vec<Resource>;

/// Everything known about a resource or a resource template at compile time.
///
/// `#[mcp::resource]` emits one; it can also be written by hand. A template's handler gets its variables as
/// string arguments:
///
/// ```
/// use mcp::{Context, ReadResourceResult, ResourceContents};
/// use mcp::handler::{Arguments, ResourceDef, ResourceHandler};
/// use serde_json::Value;
///
/// fn read_note(_: &Context, args: Arguments) -> Result<ReadResourceResult, mcp::Error> {
///     let id = args.as_map().get("id").and_then(Value::as_str).unwrap_or_default();
///     let note = ResourceContents::text(format!("notes://{id}"), Some("text/plain"), format!("Note {id}"));
///     Ok(ReadResourceResult::new(vec![note]))
/// }
///
/// let notes = ResourceDef::template("notes://{id}", "note", ResourceHandler::Blocking(read_note), "notes.rs:1")
///     .mime_type("text/plain");
/// let server = mcp::Server::builder().resource_def(notes).build().unwrap();
/// assert_eq!(server.schema()["resourceTemplates"][0]["uriTemplate"], "notes://{id}");
///
/// let bad = ResourceDef::template("notes://{a}{b}", "bad", ResourceHandler::Blocking(read_note), "notes.rs:2");
/// assert!(matches!(mcp::Server::builder().resource_def(bad).build(), Err(mcp::BuildError::BadTemplate { .. })));
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct ResourceDef {
    /// The URI, or the RFC 6570 template when `template` is set.
    pub uri: Name,
    /// Whether `uri` is a template.
    pub template: bool,
    /// Programmatic name.
    pub name: Name,
    /// Display title.
    pub title: Option<&'static str>,
    /// What it is.
    pub description: Option<&'static str>,
    /// Its MIME type.
    pub mime_type: Option<&'static str>,
    /// Its size in bytes.
    pub size: Option<u64>,
    /// Who it is for.
    pub audience: &'static [Role],
    /// How important it is (0 to 1).
    pub priority: Option<f64>,
    /// Icon URIs.
    pub icons: &'static [&'static str],
    /// Completion functions, by template variable.
    pub completions: &'static [(&'static str, Completer)],
    /// Lists the resources a template names, for `resources/list`.
    pub list: Option<Lister>,
    /// Reads it.
    pub handler: ResourceHandler,
    /// Where it was defined (`file:line`).
    pub location: Name,
    /// The OAuth scopes a caller's access token must grant to read it, when the server verifies tokens
    /// ([`Authorization`](crate::auth::Authorization)); none beyond a valid token unless set.
    pub scopes: &'static [&'static str],
    /// Labels (`tags = ["admin"]` on its attribute) that visibility rules read
    /// ([`ServerBuilder::exclude_tags`](crate::ServerBuilder::exclude_tags), [`ServerBuilder::visible`](crate::ServerBuilder::visible)).
    pub tags: &'static [&'static str],
    /// What its injected parameters need from the server.
    pub injected: Injected,
    /// Its caching hints in the 2026 era (`ttlMs`, `cacheScope` of `resources/read`); the server's defaults if
    /// `None`.
    pub cache: Option<CacheHint>,
    /// Its `_meta` in `resources/list`, as the text of a JSON object, checked when the server is built;
    /// [`ServerBuilder::resource_meta`](crate::ServerBuilder::resource_meta) adds to it.
    pub meta: Option<&'static str>,
}

impl ResourceDef {
    /// A resource at a fixed URI.
    pub const fn fixed(
        uri: &'static str,
        name: &'static str,
        handler: ResourceHandler,
        location: &'static str,
    ) -> Self {
        ResourceDef::new(uri, false, name, handler, location)
    }

    /// A resource template.
    pub const fn template(
        template: &'static str,
        name: &'static str,
        handler: ResourceHandler,
        location: &'static str,
    ) -> Self {
        ResourceDef::new(template, true, name, handler, location)
    }

    const fn new(
        uri: &'static str,
        template: bool,
        name: &'static str,
        handler: ResourceHandler,
        location: &'static str,
    ) -> Self {
        ResourceDef {
            uri: Name::new(uri),
            template,
            name: Name::new(name),
            title: None,
            description: None,
            mime_type: None,
            size: None,
            audience: &[],
            priority: None,
            icons: &[],
            completions: &[],
            list: None,
            handler,
            location: Name::new(location),
            scopes: &[],
            tags: &[],
            injected: &[],
            cache: None,
            meta: None,
        }
    }

    /// The OAuth scopes a caller's access token must grant to read it (`#[mcp::resource(scopes = [...])]`), when
    /// the server verifies tokens; a request without them is answered `403 insufficient_scope`.
    pub const fn scopes(mut self, scopes: &'static [&'static str]) -> Self {
        self.scopes = scopes;
        self
    }

    /// Labels that visibility rules read (`tags = [...]` on its attribute).
    pub const fn tags(mut self, tags: &'static [&'static str]) -> Self {
        self.tags = tags;
        self
    }

    /// Sets the title.
    pub const fn title(mut self, v: &'static str) -> Self {
        self.title = Some(v);
        self
    }
    /// Sets the description.
    pub const fn description(mut self, v: &'static str) -> Self {
        self.description = Some(v);
        self
    }
    /// Sets the MIME type.
    pub const fn mime_type(mut self, v: &'static str) -> Self {
        self.mime_type = Some(v);
        self
    }
    /// Sets the size.
    pub const fn size(mut self, v: u64) -> Self {
        self.size = Some(v);
        self
    }
    /// Sets the audience.
    pub const fn audience(mut self, v: &'static [Role]) -> Self {
        self.audience = v;
        self
    }
    /// Sets the priority.
    pub const fn priority(mut self, v: f64) -> Self {
        self.priority = Some(v);
        self
    }
    /// Sets the icons.
    pub const fn icons(mut self, v: &'static [&'static str]) -> Self {
        self.icons = v;
        self
    }
    /// Sets the completion functions.
    pub const fn completions(mut self, v: &'static [(&'static str, Completer)]) -> Self {
        self.completions = v;
        self
    }
    /// Sets its `_meta` in `resources/list` (the text of a JSON object; refused when the server is built if it is
    /// not one).
    pub const fn meta(mut self, json: &'static str) -> Self {
        self.meta = Some(json);
        self
    }

    /// Sets the lister.
    pub const fn list(mut self, v: Lister) -> Self {
        self.list = Some(v);
        self
    }
    /// Declares what the injected parameters need.
    pub const fn injects(mut self, injected: Injected) -> Self {
        self.injected = injected;
        self
    }
    /// Sets its caching hints for the 2026 era.
    pub const fn cache(mut self, ttl_ms: u64, scope: CacheScope) -> Self {
        self.cache = Some(CacheHint { ttl_ms, scope });
        self
    }

    fn annotations(&self) -> Option<Annotations> {
        if self.audience.is_empty() && self.priority.is_none() {
            return None;
        }
        Some(Annotations {
            audience: (!self.audience.is_empty()).then(|| self.audience.to_vec()),
            priority: self.priority,
            last_modified: None,
        })
    }

    fn icon_list(&self) -> Vec<Icon> {
        self.icons.iter().map(|s| Icon::new(*s)).collect()
    }

    pub(crate) fn resource(&self) -> Resource {
        Resource {
            uri: self.uri.to_string(),
            name: self.name.to_string(),
            title: self.title.map(str::to_owned),
            description: self.description.map(str::to_owned),
            mime_type: self.mime_type.map(str::to_owned),
            size: self.size,
            annotations: self.annotations(),
            icons: self.icon_list(),
        }
    }

    pub(crate) fn resource_template(&self) -> ResourceTemplate {
        ResourceTemplate {
            uri_template: self.uri.to_string(),
            name: self.name.to_string(),
            title: self.title.map(str::to_owned),
            description: self.description.map(str::to_owned),
            mime_type: self.mime_type.map(str::to_owned),
            annotations: self.annotations(),
            icons: self.icon_list(),
        }
    }
}

/// A resource defined by `#[mcp::resource]`: `Server::builder().resource::<my_resource>()`.
pub trait ResourceItem {
    /// The resource's definition.
    const DEF: &'static ResourceDef;
}

/// The values a resource function may return: a `String` (text), a `Vec<u8>` (bytes, sent as base64 `blob`),
/// a [`ResourceContents`], a `Vec<ResourceContents>`, a [`ReadResourceResult`], or a `Result` of one of them.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from an MCP resource",
    note = "return a `String`, a `Vec<u8>`, an `mcp::protocol::ResourceContents`, a `Vec` of them, an `mcp::protocol::ReadResourceResult`, or a `Result` of one of them"
)]
pub trait IntoResourceResult {
    /// Converts the value; `uri` is the URI that was read, `mime_type` the resource's.
    fn into_resource_result(self, uri: &str, mime_type: Option<&str>) -> Result<ReadResourceResult, Error>;
}

fn one(contents: ResourceContents) -> Result<ReadResourceResult, Error> {
    Ok(ReadResourceResult { contents: vec![contents], meta: None })
}

impl IntoResourceResult for String {
    fn into_resource_result(self, uri: &str, mime_type: Option<&str>) -> Result<ReadResourceResult, Error> {
        one(ResourceContents::text(uri, mime_type, self))
    }
}

impl IntoResourceResult for &str {
    fn into_resource_result(self, uri: &str, mime_type: Option<&str>) -> Result<ReadResourceResult, Error> {
        one(ResourceContents::text(uri, mime_type, self))
    }
}

impl IntoResourceResult for Vec<u8> {
    fn into_resource_result(self, uri: &str, mime_type: Option<&str>) -> Result<ReadResourceResult, Error> {
        // Encoded as it is written: no base64 copy of the payload is made.
        one(ResourceContents::Bytes {
            uri: uri.to_owned(),
            mime_type: mime_type.map(str::to_owned),
            bytes: self,
            meta: None,
        })
    }
}

impl IntoResourceResult for ResourceContents {
    fn into_resource_result(self, _: &str, _: Option<&str>) -> Result<ReadResourceResult, Error> {
        one(self)
    }
}

impl IntoResourceResult for Vec<ResourceContents> {
    fn into_resource_result(self, _: &str, _: Option<&str>) -> Result<ReadResourceResult, Error> {
        Ok(ReadResourceResult { contents: self, meta: None })
    }
}

impl IntoResourceResult for ReadResourceResult {
    fn into_resource_result(self, _: &str, _: Option<&str>) -> Result<ReadResourceResult, Error> {
        Ok(self)
    }
}

impl<T: IntoResourceResult, E: Display + 'static> IntoResourceResult for Result<T, E> {
    fn into_resource_result(self, uri: &str, mime_type: Option<&str>) -> Result<ReadResourceResult, Error> {
        self.map_err(error_of).and_then(|v| v.into_resource_result(uri, mime_type))
    }
}

/// A resource that does not exist: -32002 in the 2025 era, -32602 in the 2026 era (SEP-2164), both naming it.
pub(crate) fn not_found(uri: &str, era: crate::context::Era) -> Error {
    for_era(Error::resource_not_found(uri), era)
}

/// A resource's error as its era spells it: the 2026 era has no -32002, its "not found" is -32602.
pub(crate) fn for_era(error: Error, era: crate::context::Era) -> Error {
    era.resource_error(error)
}

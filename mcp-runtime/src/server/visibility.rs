//! Per-caller visibility: rules that decide, per request, which tools, prompts and resources a caller sees. Hidden
//! means not listed, not callable (the unknown-tool error, as if it did not exist), not readable and not
//! completable. The rules are [`ServerBuilder::visible`](crate::ServerBuilder::visible) predicates and the tag
//! filters [`include_tags`](crate::ServerBuilder::include_tags) and
//! [`exclude_tags`](crate::ServerBuilder::exclude_tags); an item is visible when every rule lets it be.
//!
//! A rule sees the [`Caller`] (its verified token, its client, its era) and the [`Item`] (its name, tags and
//! scopes). When what a rule reads changes outside a request (a role granted in a database, say),
//! [`Server::visibility_changed`](crate::Server::visibility_changed) tells every client to list again.
//!
//! ```
//! use mcp::visibility::{Caller, Item};
//!
//! /// Reset the shop.
//! #[mcp::tool(tags = ["admin"])]
//! fn reset() -> String {
//!     "reset".into()
//! }
//!
//! /// Say hello.
//! #[mcp::tool]
//! fn hello() -> String {
//!     "hello".into()
//! }
//!
//! // Admin tools only for callers whose token grants `admin`.
//! let server = mcp::Server::builder()
//!     .tool::<reset>()
//!     .tool::<hello>()
//!     .visible(|caller: &Caller, item: &Item| !item.tags().contains(&"admin") || caller.has_scope("admin"))
//!     .build()
//!     .unwrap();
//! # let _ = server;
//! ```

use std::sync::Arc;

use crate::auth::AuthInfo;
use crate::context::{ClientInfo, Era, RequestMeta};
use crate::handler::prompt::PromptDef;
use crate::handler::resource::ResourceDef;
use crate::handler::tool::ToolDef;

/// Who is asking, as a visibility rule sees it.
#[derive(Clone, Copy)]
pub struct Caller<'a> {
    meta: &'a RequestMeta,
}

impl<'a> Caller<'a> {
    pub(crate) fn new(meta: &'a RequestMeta) -> Caller<'a> {
        Caller { meta }
    }

    /// Its verified access token, when the server verifies tokens (HTTP with
    /// [`Authorization`](crate::auth::Authorization)).
    pub fn auth(&self) -> Option<&'a AuthInfo> {
        self.meta.http.as_ref().and_then(|h| h.auth.as_deref())
    }

    /// Whether its token grants `scope` (`false` without a token).
    pub fn has_scope(&self, scope: &str) -> bool {
        self.auth().is_some_and(|a| a.scopes.iter().any(|s| s == scope))
    }

    /// Its client's name, version and capabilities, when known.
    pub fn client(&self) -> Option<&'a ClientInfo> {
        self.meta.client.as_deref()
    }

    /// The protocol era of its request.
    pub fn era(&self) -> Era {
        self.meta.era
    }

    /// Everything about the request (its `_meta`, its HTTP headers).
    pub fn request(&self) -> &'a RequestMeta {
        self.meta
    }
}

impl std::fmt::Debug for Caller<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Caller")
            .field("subject", &self.auth().map(|a| a.subject.as_str()))
            .field("client", &self.client().map(|c| c.info.name.as_str()))
            .finish()
    }
}

/// What a visibility rule decides about: a tool, a prompt, or a resource or template.
#[derive(Clone, Copy)]
#[non_exhaustive]
pub enum Item<'a> {
    /// A tool.
    Tool(&'a ToolDef),
    /// A prompt.
    Prompt(&'a PromptDef),
    /// A resource, or a resource template.
    Resource(&'a ResourceDef),
}

impl std::fmt::Debug for Item<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self {
            Item::Tool(_) => "Tool",
            Item::Prompt(_) => "Prompt",
            Item::Resource(_) => "Resource",
        };
        f.debug_tuple(kind).field(&self.name()).finish()
    }
}

impl<'a> Item<'a> {
    /// A tool's or prompt's name; a resource's URI (a template's URI template).
    pub fn name(&self) -> &'a str {
        match self {
            Item::Tool(d) => &d.name,
            Item::Prompt(d) => &d.name,
            Item::Resource(d) => &d.uri,
        }
    }

    /// Its tags (`tags = [...]` on its attribute).
    pub fn tags(&self) -> &'static [&'static str] {
        match self {
            Item::Tool(d) => d.tags,
            Item::Prompt(d) => d.tags,
            Item::Resource(d) => d.tags,
        }
    }

    /// The scopes it needs (`scopes = [...]`).
    pub fn scopes(&self) -> &'static [&'static str] {
        match self {
            Item::Tool(d) => d.scopes,
            Item::Prompt(d) => d.scopes,
            Item::Resource(d) => d.scopes,
        }
    }
}

/// A visibility rule: `true` lets the caller see the item.
pub(crate) type Rule = Arc<dyn Fn(&Caller<'_>, &Item<'_>) -> bool + Send + Sync>;

/// The rules of a server; none by default, and then nothing is hidden (and nothing checked per request).
#[derive(Clone, Default)]
pub(crate) struct Visibility {
    pub(crate) rules: Vec<Rule>,
}

impl Visibility {
    /// Whether any rule is set.
    pub(crate) fn is_set(&self) -> bool {
        !self.rules.is_empty()
    }

    /// Whether the caller of this request sees the item.
    pub(crate) fn sees(&self, meta: &RequestMeta, item: &Item<'_>) -> bool {
        let caller = Caller::new(meta);
        self.rules.iter().all(|rule| rule(&caller, item))
    }
}

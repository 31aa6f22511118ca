//! What the server's handlers need from a caller's access token: the scopes of the handler a request is for, and
//! every scope any handler needs (the Protected Resource Metadata's `scopes_supported`).

use std::collections::BTreeSet;

use serde_json::Value;

use super::Server;
use crate::auth::Needed;

impl Server {
    /// The scopes a request for `method` with `params` needs: those of the tool, prompt, resource, template or
    /// custom method it is for; none for the rest (lists, tasks, `initialize`, notifications).
    pub(crate) fn scopes_needed(&self, method: &str, params: Option<&Value>) -> Needed {
        let text = |key: &str| params.and_then(|p| p.get(key)).and_then(Value::as_str).unwrap_or_default();
        let registry = self.registry();
        match method {
            "tools/call" => registry.tool(text("name")).map_or(&[], |d| d.scopes),
            "prompts/get" => registry.prompt(text("name")).map_or(&[], |d| d.scopes),
            "resources/read" | "resources/subscribe" | "resources/unsubscribe" => {
                registry.resolve(text("uri")).map_or(&[], |(d, _)| d.scopes)
            }
            "completion/complete" => {
                let reference = params.and_then(|p| p.get("ref"));
                let field = |key: &str| reference.and_then(|r| r.get(key)).and_then(Value::as_str).unwrap_or_default();
                match field("type") {
                    "ref/prompt" => registry.prompt(field("name")).map_or(&[], |d| d.scopes),
                    "ref/resource" => registry.templates.get(field("uri")).map_or(&[], |(l, _)| l.def.scopes),
                    _ => &[],
                }
            }
            other => {
                let inner = &self.inner;
                inner
                    .handlers()
                    .methods
                    .get(other)
                    .or_else(|| inner.handlers().extension_methods.get(other))
                    .map_or(&[], |d| d.scopes)
            }
        }
    }

    /// Every scope some handler needs.
    pub(crate) fn scopes_required(&self) -> BTreeSet<&'static str> {
        let registry = self.registry();
        let mut scopes = BTreeSet::new();
        scopes.extend(registry.tools.values().flat_map(|l| l.def.scopes.iter().copied()));
        scopes.extend(registry.prompts.values().flat_map(|l| l.def.scopes.iter().copied()));
        scopes.extend(registry.resources.values().flat_map(|l| l.def.scopes.iter().copied()));
        scopes.extend(registry.templates.values().flat_map(|(l, _)| l.def.scopes.iter().copied()));
        let methods = self.inner.handlers().methods.values().chain(self.inner.handlers().extension_methods.values());
        scopes.extend(methods.flat_map(|d| d.scopes.iter().copied()));
        scopes
    }

    /// Whether the tool, prompt, resource or template a request is for is hidden from its caller by the visibility
    /// rules: the error the dispatcher would answer (as if it did not exist), for the HTTP layer to answer before it
    /// refuses the caller's scopes (a 403 would tell the caller it exists). `None` when there are no rules, or the
    /// item is visible, or the request is for none.
    pub(crate) fn hidden_error(
        &self,
        meta: &crate::context::RequestMeta,
        method: &str,
        params: Option<&Value>,
    ) -> Option<crate::wire::error::Error> {
        use crate::server::visibility::Item;
        use crate::wire::error::Error;
        let rules = &self.inner.served().visibility;
        if !rules.is_set() {
            return None;
        }
        let text = |key: &str| params.and_then(|p| p.get(key)).and_then(Value::as_str).unwrap_or_default();
        let registry = self.registry();
        let hidden = |item: Item<'_>| !rules.sees(meta, &item);
        match method {
            "tools/call" => registry
                .tool(text("name"))
                .filter(|d| hidden(Item::Tool(d)))
                .map(|_| Error::invalid_params(format!("unknown tool: {}", text("name")))),
            "prompts/get" => registry
                .prompt(text("name"))
                .filter(|d| hidden(Item::Prompt(d)))
                .map(|_| Error::invalid_params(format!("unknown prompt: {}", text("name")))),
            "resources/read" => registry
                .resolve(text("uri"))
                .filter(|(d, _)| hidden(Item::Resource(d)))
                .map(|_| crate::handler::resource::not_found(text("uri"), meta.era)),
            _ => None,
        }
    }
}

//! The registry: what a server serves (tools, prompts, resources, templates), each with its descriptor computed once,
//! and every list result paginated and serialized once. A change builds a new snapshot; readers hold an `Arc` to one.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use crate::base::name::Name;
use crate::handler::prompt::{Completer, PromptDef};
use crate::handler::resource::ResourceDef;
use crate::handler::tool::ToolDef;
use crate::handler::uri_template::UriTemplate;
use crate::server::visibility::Item;
use crate::server::BuildError;
use crate::wire::error::Error;
use crate::wire::protocol::Tool;

mod headers;
mod pages;

pub(crate) use headers::{param_headers, ParamHeader};
use pages::paginate;
pub(crate) use pages::{decode_cursor, encode_cursor};

/// A definition with its descriptor (the JSON that list results show), and whether it is listed and served.
#[derive(Clone)]
pub(crate) struct Listed<D> {
    pub def: D,
    pub descriptor: Value,
    /// Where the 2025-11-25 form differs (a tool's `execution.taskSupport`): that form.
    pub v2025: Option<Value>,
    pub enabled: bool,
}

/// The list methods, each with its own pages and cursors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ListKind {
    Tools,
    Prompts,
    Resources,
    Templates,
}

impl ListKind {
    fn key(self) -> &'static str {
        match self {
            ListKind::Tools => "tools",
            ListKind::Prompts => "prompts",
            ListKind::Resources => "resources",
            ListKind::Templates => "resourceTemplates",
        }
    }
}

/// One snapshot of everything served.
#[derive(Clone, Default)]
pub(crate) struct Registry {
    pub tools: BTreeMap<Name, Listed<ToolDef>>,
    /// The enabled tools by name: `tools/call` finds its tool with one hash (the ordered map above serves the lists;
    /// its lookup compares the name with a node's keys one by one).
    callable: HashMap<Name, Arc<ToolDef>>,
    pub prompts: BTreeMap<Name, Listed<PromptDef>>,
    pub resources: BTreeMap<Name, Listed<ResourceDef>>,
    pub templates: BTreeMap<Name, (Listed<ResourceDef>, UriTemplate)>,
    /// Each list's pages: the 2025 form, then the 2026 form (with `resultType`, caching hints, server info).
    pages: [Vec<Arc<RawValue>>; 8],
    page_size: usize,
    /// What 2026 list results carry besides their items.
    extra_2026: Map<String, Value>,
    /// The parameters mirrored in `Mcp-Param-*` headers, of each tool that has any (most have none: a call of
    /// theirs searches a small table, or an empty one).
    headers: BTreeMap<String, Vec<ParamHeader>>,
    /// Whether optional properties of input schemas keep their `null` (`ServerBuilder::nullable_options`).
    pub nullable_options: bool,
    /// `_meta` given for tools by name, and for resources by URI (`ServerBuilder::tool_meta`, `resource_meta`), laid
    /// over their definitions' own.
    pub tool_meta: HashMap<String, Map<String, Value>>,
    pub resource_meta: HashMap<String, Map<String, Value>>,
    /// The prompts (by name) and templates (by URI template) another server completes: their `completion/complete`
    /// goes to the server's relay ([`ServerInner::relay_completion`](crate::server::ServerInner)).
    pub relayed_completions: std::collections::HashSet<Name>,
}

/// A definition's `_meta` (the text of a JSON object) with `more` laid over it; `None` when neither has any.
fn meta_of(
    name: &str,
    text: Option<&'static str>,
    more: Option<&Map<String, Value>>,
) -> Result<Option<Value>, BuildError> {
    let mut meta = match text {
        None => Map::new(),
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(m)) => m,
            Ok(other) => {
                let why = format!("it is {other}");
                return Err(BuildError::BadMeta { name: name.to_owned(), why });
            }
            Err(e) => return Err(BuildError::BadMeta { name: name.to_owned(), why: e.to_string() }),
        },
    };
    if let Some(more) = more {
        meta.extend(more.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    Ok((!meta.is_empty()).then_some(Value::Object(meta)))
}

fn location_pair(a: &Name, b: &Name) -> (String, String) {
    if a <= b {
        (a.to_string(), b.to_string())
    } else {
        (b.to_string(), a.to_string())
    }
}

impl Registry {
    /// An empty registry; 2026 list pages carry `extra_2026` (result type, caching hints, server info).
    pub(crate) fn new(page_size: usize, extra_2026: Map<String, Value>) -> Registry {
        Registry { page_size: page_size.max(1), extra_2026, ..Registry::default() }
    }

    /// The parameters of a tool that are mirrored in `Mcp-Param-*` headers.
    #[cfg(feature = "http")]
    pub(crate) fn tool_headers(&self, name: &str) -> Option<&[ParamHeader]> {
        self.headers.get(name).map(Vec::as_slice)
    }

    /// Records a tool's mirrored parameters (none: forgets any an earlier tool of that name had).
    fn set_tool_headers(&mut self, name: &str, headers: Vec<ParamHeader>) {
        if headers.is_empty() {
            self.headers.remove(name);
        } else {
            self.headers.insert(name.to_owned(), headers);
        }
    }

    pub(crate) fn insert_tool(&mut self, def: ToolDef) -> Result<(), BuildError> {
        crate::handler::tool::check_tool_name(&def.name)
            .map_err(|why| BuildError::BadToolName { name: def.name.to_string(), why })?;
        if let Some(first) = self.tools.get(&def.name) {
            if first.def.location == def.location {
                return Ok(()); // the same definition twice
            }
            let (first, second) = location_pair(&first.def.location, &def.location);
            return Err(BuildError::DuplicateTool { name: def.name.to_string(), first, second });
        }
        let mut input_schema = def
            .input_schema
            .build()
            .map_err(|e| BuildError::BadInputSchema { name: def.name.to_string(), why: e.to_string() })?;
        if !self.nullable_options {
            crate::handler::tool::portable_options(&mut input_schema);
        }
        if input_schema.get("type").and_then(Value::as_str) != Some("object") {
            let why = "it is not an object schema (`\"type\": \"object\"`)".to_owned();
            return Err(BuildError::BadInputSchema { name: def.name.to_string(), why });
        }
        let headers = param_headers(&input_schema)
            .map_err(|why| BuildError::BadHeader { tool: def.name.to_string(), message: why })?;
        self.set_tool_headers(&def.name, headers);
        let tool = Tool {
            name: def.name.to_string(),
            title: def.title.map(str::to_owned),
            description: def.description.map(str::to_owned),
            input_schema,
            output_schema: (def.output_schema)(),
            annotations: def.hints.to_annotations(),
            icons: def.icons.iter().map(|s| crate::wire::protocol::Icon::new(*s)).collect(),
        };
        let mut descriptor = serde_json::to_value(tool).expect("a tool descriptor serializes");
        if let Some(meta) = meta_of(&def.name, def.meta, self.tool_meta.get(def.name.as_str()))? {
            descriptor["_meta"] = meta;
        }
        // `execution` is a 2025-11-25 field: the 2026-07-28 Tasks extension decides per request instead.
        let v2025 = (def.task.support != crate::wire::task::TaskSupport::Forbidden).then(|| {
            let mut v2025 = descriptor.clone();
            v2025["execution"] = json!({ "taskSupport": def.task.support.as_str() });
            v2025
        });
        self.callable.insert(def.name.clone(), Arc::new(def.clone()));
        self.tools.insert(def.name.clone(), Listed { def, descriptor, v2025, enabled: true });
        Ok(())
    }

    /// Removes a tool; `false` if there was none of that name.
    /// Applies a registry edit (on this instance, or published by another); `false` when it found nothing to
    /// change. An added definition is looked up among those the program links in (`#[mcp::tool]`, ...): an
    /// instance whose program has none of that name lists only its own, and says so.
    pub(crate) fn apply_edit(&mut self, list: crate::server::hub::List, edit: &crate::server::hub::Edit) -> bool {
        use crate::server::hub::{Edit, List};
        match (list, edit) {
            (List::Tools, Edit::Enabled { name, enabled }) => self.set_tool_enabled(name, *enabled),
            (List::Tools, Edit::Removed { name }) => self.remove_tool(name),
            (List::Prompts, Edit::Enabled { name, enabled }) => {
                self.prompts.get_mut(name.as_str()).map(|l| l.enabled = *enabled).is_some()
            }
            (List::Prompts, Edit::Removed { name }) => self.prompts.remove(name.as_str()).is_some(),
            (List::Resources, Edit::Enabled { name, enabled }) => {
                let fixed = self.resources.get_mut(name.as_str()).map(|l| l.enabled = *enabled).is_some();
                fixed || self.templates.get_mut(name.as_str()).map(|(l, _)| l.enabled = *enabled).is_some()
            }
            (List::Resources, Edit::Removed { name }) => {
                self.resources.remove(name.as_str()).is_some() || self.templates.remove(name.as_str()).is_some()
            }
            (list, Edit::Added { name }) => {
                let added = match list {
                    List::Tools => inventory::iter::<super::ToolRegistration>
                        .into_iter()
                        .find(|r| r.0.name == name.as_str())
                        .map(|r| self.insert_tool(r.0.clone())),
                    List::Prompts => inventory::iter::<super::PromptRegistration>
                        .into_iter()
                        .find(|r| r.0.name == name.as_str())
                        .map(|r| self.insert_prompt(r.0.clone())),
                    List::Resources => inventory::iter::<super::ResourceRegistration>
                        .into_iter()
                        .find(|r| r.0.uri == name.as_str())
                        .map(|r| self.insert_resource(r.0.clone())),
                };
                match added {
                    Some(Ok(())) => true,
                    // Already here (this program added it too).
                    Some(Err(_)) => false,
                    None => {
                        tracing::warn!(
                            name = %name,
                            "another instance added a definition this program does not have (one built at run time): it is not listed here"
                        );
                        false
                    }
                }
            }
        }
    }

    /// A tool another server serves (a mount's, a proxy's): `def` runs the call, `descriptor` is what the other
    /// server lists (under the name it has here). A name taken is a `DuplicateTool` naming both.
    #[cfg_attr(not(feature = "client"), allow(dead_code))]
    pub(crate) fn insert_relayed_tool(&mut self, def: ToolDef, descriptor: Value) -> Result<(), BuildError> {
        crate::handler::tool::check_tool_name(&def.name)
            .map_err(|why| BuildError::BadToolName { name: def.name.to_string(), why })?;
        if let Some(first) = self.tools.get(&def.name) {
            let (first, second) = location_pair(&first.def.location, &def.location);
            return Err(BuildError::DuplicateTool { name: def.name.to_string(), first, second });
        }
        self.set_tool_headers(&def.name, param_headers(&descriptor["inputSchema"]).unwrap_or_default());
        self.callable.insert(def.name.clone(), Arc::new(def.clone()));
        self.tools.insert(def.name.clone(), Listed { def, descriptor, v2025: None, enabled: true });
        Ok(())
    }

    /// A prompt another server serves, as [`Registry::insert_relayed_tool`].
    #[cfg_attr(not(feature = "client"), allow(dead_code))]
    pub(crate) fn insert_relayed_prompt(&mut self, def: PromptDef, descriptor: Value) -> Result<(), BuildError> {
        if let Some(first) = self.prompts.get(&def.name) {
            let (first, second) = location_pair(&first.def.location, &def.location);
            return Err(BuildError::DuplicatePrompt { name: def.name.to_string(), first, second });
        }
        self.prompts.insert(def.name.clone(), Listed { def, descriptor, v2025: None, enabled: true });
        Ok(())
    }

    /// A resource or template another server serves, as [`Registry::insert_relayed_tool`].
    #[cfg_attr(not(feature = "client"), allow(dead_code))]
    pub(crate) fn insert_relayed_resource(&mut self, def: ResourceDef, descriptor: Value) -> Result<(), BuildError> {
        let existing = if def.template {
            self.templates.get(&def.uri).map(|(l, _)| l.def.location.clone())
        } else {
            self.resources.get(&def.uri).map(|l| l.def.location.clone())
        };
        if let Some(first) = existing {
            let (first, second) = location_pair(&first, &def.location);
            return Err(BuildError::DuplicateResource { uri: def.uri.to_string(), first, second });
        }
        let uri = def.uri.clone();
        if def.template {
            let template = UriTemplate::parse(&uri).map_err(|e| BuildError::BadTemplate { message: e.to_string() })?;
            self.templates.insert(uri, (Listed { def, descriptor, v2025: None, enabled: true }, template));
        } else {
            self.resources.insert(uri, Listed { def, descriptor, v2025: None, enabled: true });
        }
        Ok(())
    }

    pub(crate) fn remove_tool(&mut self, name: &str) -> bool {
        self.callable.remove(name);
        self.headers.remove(name);
        self.tools.remove(name).is_some()
    }

    /// Enables or disables a tool; `false` if there is none of that name.
    pub(crate) fn set_tool_enabled(&mut self, name: &str, enabled: bool) -> bool {
        let Some(listed) = self.tools.get_mut(name) else { return false };
        listed.enabled = enabled;
        if enabled {
            self.callable.insert(listed.def.name.clone(), Arc::new(listed.def.clone()));
        } else {
            self.callable.remove(name);
        }
        true
    }

    pub(crate) fn insert_prompt(&mut self, def: PromptDef) -> Result<(), BuildError> {
        if let Some(first) = self.prompts.get(&def.name) {
            if first.def.location == def.location {
                return Ok(());
            }
            let (first, second) = location_pair(&first.def.location, &def.location);
            return Err(BuildError::DuplicatePrompt { name: def.name.to_string(), first, second });
        }
        let descriptor = serde_json::to_value(def.descriptor()).expect("a prompt descriptor serializes");
        self.prompts.insert(def.name.clone(), Listed { def, descriptor, v2025: None, enabled: true });
        Ok(())
    }

    pub(crate) fn insert_resource(&mut self, def: ResourceDef) -> Result<(), BuildError> {
        let existing = if def.template {
            self.templates.get(&def.uri).map(|(l, _)| l.def.location.clone())
        } else {
            self.resources.get(&def.uri).map(|l| l.def.location.clone())
        };
        if let Some(first) = existing {
            if first == def.location {
                return Ok(());
            }
            let (first, second) = location_pair(&first, &def.location);
            return Err(BuildError::DuplicateResource { uri: def.uri.to_string(), first, second });
        }
        if def.template {
            let template =
                UriTemplate::parse(&def.uri).map_err(|e| BuildError::BadTemplate { message: e.to_string() })?;
            let mut descriptor = serde_json::to_value(def.resource_template()).expect("a template serializes");
            if let Some(meta) = meta_of(&def.uri, def.meta, self.resource_meta.get(def.uri.as_str()))? {
                descriptor["_meta"] = meta;
            }
            self.templates.insert(def.uri.clone(), (Listed { def, descriptor, v2025: None, enabled: true }, template));
        } else {
            let mut descriptor = serde_json::to_value(def.resource()).expect("a resource serializes");
            if let Some(meta) = meta_of(&def.uri, def.meta, self.resource_meta.get(def.uri.as_str()))? {
                descriptor["_meta"] = meta;
            }
            self.resources.insert(def.uri.clone(), Listed { def, descriptor, v2025: None, enabled: true });
        }
        Ok(())
    }

    /// Recomputes every list's pages. Called once per snapshot.
    pub(crate) fn paginate(&mut self) {
        fn enabled<'a, D: 'a>(it: impl Iterator<Item = &'a Listed<D>> + Clone) -> [Vec<&'a Value>; 2] {
            let v2025 = it.clone().filter(|l| l.enabled).map(|l| l.v2025.as_ref().unwrap_or(&l.descriptor)).collect();
            [v2025, it.filter(|l| l.enabled).map(|l| &l.descriptor).collect()]
        }
        let lists = [
            (ListKind::Tools, enabled(self.tools.values())),
            (ListKind::Prompts, enabled(self.prompts.values())),
            (ListKind::Resources, enabled(self.resources.values())),
            (ListKind::Templates, enabled(self.templates.values().map(|(l, _)| l))),
        ];
        let mut pages: [Vec<Arc<RawValue>>; 8] = Default::default();
        for (kind, [v2025, v2026]) in lists {
            pages[kind as usize] = paginate(kind, &v2025, self.page_size, None);
            pages[4 + kind as usize] = paginate(kind, &v2026, self.page_size, Some(&self.extra_2026));
        }
        self.pages = pages;
    }

    /// The page a cursor names (the first without one), serialized in the 2025 or the 2026 form.
    pub(crate) fn page(&self, kind: ListKind, cursor: Option<&str>, v2026: bool) -> Result<Arc<RawValue>, Error> {
        let index = match cursor {
            None => 0,
            Some(c) => decode_cursor(kind, c)?,
        };
        self.pages[kind as usize + if v2026 { 4 } else { 0 }]
            .get(index)
            .cloned()
            .ok_or_else(|| Error::invalid_params(format!("invalid cursor {cursor:?}: no such page")))
    }

    /// The same page of a list made for one caller: only the items `keep` lets them see (what their scopes grant,
    /// when the server hides the rest; what the visibility rules allow). Made per request, so cursors count in this
    /// caller's list.
    pub(crate) fn page_where(
        &self,
        kind: ListKind,
        cursor: Option<&str>,
        v2026: bool,
        keep: &dyn Fn(&Item<'_>) -> bool,
    ) -> Result<Arc<RawValue>, Error> {
        fn pick<'a, D: 'a>(
            it: impl Iterator<Item = &'a Listed<D>>,
            keep: impl Fn(&D) -> bool,
            v2026: bool,
        ) -> Vec<&'a Value> {
            it.filter(|l| l.enabled && keep(&l.def))
                .map(|l| if v2026 { &l.descriptor } else { l.v2025.as_ref().unwrap_or(&l.descriptor) })
                .collect()
        }
        let items = match kind {
            ListKind::Tools => pick(self.tools.values(), |d| keep(&Item::Tool(d)), v2026),
            ListKind::Prompts => pick(self.prompts.values(), |d| keep(&Item::Prompt(d)), v2026),
            ListKind::Resources => pick(self.resources.values(), |d| keep(&Item::Resource(d)), v2026),
            ListKind::Templates => pick(self.templates.values().map(|(l, _)| l), |d| keep(&Item::Resource(d)), v2026),
        };
        let pages = paginate(kind, &items, self.page_size, v2026.then_some(&self.extra_2026));
        let index = match cursor {
            None => 0,
            Some(c) => decode_cursor(kind, c)?,
        };
        pages
            .get(index)
            .cloned()
            .ok_or_else(|| Error::invalid_params(format!("invalid cursor {cursor:?}: no such page")))
    }

    pub(crate) fn page_size(&self) -> usize {
        self.page_size
    }

    pub(crate) fn tool(&self, name: &str) -> Option<Arc<ToolDef>> {
        self.callable.get(name).cloned()
    }

    pub(crate) fn prompt(&self, name: &str) -> Option<PromptDef> {
        self.prompts.get(name).filter(|l| l.enabled).map(|l| l.def.clone())
    }

    /// What serves `uri`: a fixed resource, else the first template (in template order) that matches.
    pub(crate) fn resolve(&self, uri: &str) -> Option<(ResourceDef, Vec<(String, String)>)> {
        if let Some(l) = self.resources.get(uri).filter(|l| l.enabled) {
            return Some((l.def.clone(), Vec::new()));
        }
        self.templates
            .values()
            .filter(|(l, _)| l.enabled)
            .find_map(|(l, t)| t.matches(uri).map(|bound| (l.def.clone(), bound)))
    }

    /// The descriptors of the fixed resources that `keep` lets a caller see, in order.
    pub(crate) fn fixed_resources_where(&self, keep: &dyn Fn(&Item<'_>) -> bool) -> Vec<Value> {
        self.resources
            .values()
            .filter(|l| l.enabled && keep(&Item::Resource(&l.def)))
            .map(|l| l.descriptor.clone())
            .collect()
    }

    /// The templates that list their resources at run time.
    pub(crate) fn listers(&self) -> Vec<ResourceDef> {
        self.templates.values().filter(|(l, _)| l.enabled && l.def.list.is_some()).map(|(l, _)| l.def.clone()).collect()
    }

    /// The descriptors of the fixed resources, in order.
    pub(crate) fn fixed_resources(&self) -> Vec<Value> {
        self.resources.values().filter(|l| l.enabled).map(|l| l.descriptor.clone()).collect()
    }

    /// The completion function for an argument of a prompt or a variable of a template.
    pub(crate) fn completer(&self, reference: &Value, argument: &str) -> Result<Option<Completer>, Error> {
        let find =
            |list: &'static [(&'static str, Completer)]| list.iter().find(|(n, _)| *n == argument).map(|(_, f)| *f);
        match reference.get("type").and_then(Value::as_str) {
            Some("ref/prompt") => {
                let name = reference.get("name").and_then(Value::as_str).unwrap_or_default();
                let prompt =
                    self.prompt(name).ok_or_else(|| Error::invalid_params(format!("unknown prompt: {name}")))?;
                if !prompt.arguments.iter().any(|a| a.name == argument) {
                    return Err(Error::invalid_params(format!("prompt `{name}` has no argument `{argument}`")));
                }
                Ok(find(prompt.completions))
            }
            Some("ref/resource") => {
                let uri = reference.get("uri").and_then(Value::as_str).unwrap_or_default();
                let template = self
                    .templates
                    .get(uri)
                    .filter(|(l, _)| l.enabled)
                    .or_else(|| self.templates.values().find(|(l, t)| l.enabled && t.matches(uri).is_some()));
                match template {
                    Some((l, t)) => {
                        if !t.variables().any(|v| v == argument) {
                            return Err(Error::invalid_params(format!(
                                "template `{uri}` has no variable `{argument}`"
                            )));
                        }
                        Ok(find(l.def.completions))
                    }
                    None if self.resources.contains_key(uri) => Ok(None),
                    None => Err(Error::invalid_params(format!("unknown resource template: {uri}"))),
                }
            }
            _ => Err(Error::invalid_params("`ref.type` must be `ref/prompt` or `ref/resource`")),
        }
    }
}

/// A `completion/complete` result: at most 100 values, with the total and whether there are more.
pub(crate) fn completion_result(values: Vec<String>) -> Value {
    let total = values.len();
    let values: Vec<String> = values.into_iter().take(100).collect();
    json!({ "completion": { "values": values, "total": total, "hasMore": total > 100 } })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hand_written_tool_with_a_name_outside_the_rule_is_refused_naming_it_and_the_rule() {
        fn call(_: &crate::Context, _: crate::handler::Arguments) -> Result<crate::CallToolResult, Error> {
            Ok(crate::CallToolResult::success(vec![]))
        }
        let def = |name: &'static str| {
            ToolDef::new(
                name,
                || json!({"type": "object"}),
                || None,
                crate::handler::ToolHandler::Blocking(call),
                "here",
            )
        };
        let Err(err) = crate::Server::builder().tool_def(def("order book")).build() else { panic!("refused") };
        assert_eq!(err, BuildError::BadToolName { name: "order book".into(), why: "it has ' '".into() });
        let message = err.to_string();
        assert!(message.contains("`order book`") && message.contains("1 to 128 characters of `A-Z a-z 0-9 _ - .`"));

        for bad in ["", "café", "a/b", "a".repeat(129).leak()] {
            assert!(
                matches!(crate::Server::builder().tool_def(def(bad)).build(), Err(BuildError::BadToolName { .. })),
                "{bad:?}"
            );
        }
        // At run time too.
        let server = crate::Server::builder().tool_def(def("Order_book-2.v1")).build().unwrap();
        assert!(matches!(server.add_tool(def("order book")), Err(BuildError::BadToolName { .. })));
        server.add_tool(def("b".repeat(128).leak())).unwrap();
    }
}

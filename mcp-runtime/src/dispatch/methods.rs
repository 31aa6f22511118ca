//! The methods both eras serve from the server's handlers, read from a request's `params`: `tools/call`,
//! `prompts/get`, `resources/read`, `completion/complete` (here, or relayed to a mount), `resources/list`.

use serde_json::{json, Map, Value};

use super::{Call, ResultKind, View, Work};
use crate::base::name::Name;
use crate::context::{Context, RequestMeta};
use crate::handler::tool::{Arguments, Handler};
use crate::server::registry::ListKind;
use crate::server::visibility::Item;
use crate::server::Server;
use crate::wire::error::Error;

/// `arguments` of a call: an object, or nothing.
fn arguments(params: &mut Map<String, Value>, what: &str) -> Result<Arguments, Error> {
    match params.remove("arguments") {
        None | Some(Value::Null) => Ok(Arguments::default()),
        Some(Value::Object(m)) => Ok(Arguments::from(m)),
        Some(_) => Err(Error::invalid_params(format!("`arguments` must be {what}"))),
    }
}

pub(super) fn call_tool(
    server: &Server,
    found: Option<std::sync::Arc<crate::handler::tool::ToolDef>>,
    (params, text): (&mut Map<String, Value>, Option<Box<serde_json::value::RawValue>>),
    meta: &RequestMeta,
) -> Result<(Call<crate::CallToolResult>, Option<crate::hook::Claimed>), Error> {
    let name = match params.get("name") {
        Some(Value::String(n)) => n,
        _ => return Err(Error::invalid_params("`tools/call` needs a string `name`")),
    };
    let Some(def) =
        found.or_else(|| server.registry().tool(name)).filter(|d| View::of(server, meta).sees(&Item::Tool(d)))
    else {
        return Err(Error::invalid_params(format!("unknown tool: {name}")));
    };
    let arguments = match text {
        Some(text) => Arguments::from_text(text),
        None => arguments(params, "an object")?,
    };
    // An extension may take the call up (Tasks: a task); most servers have no hook.
    let claimed = crate::hook::claim(
        &server.inner.handlers().tool_call_hooks,
        &crate::hook::ToolCall { tool: &def, params, arguments: &arguments, meta },
    )?;
    Ok((
        Call {
            method: "tools/call",
            name: def.name.clone(),
            work: Work::Handler(def.handler),
            arguments,
            kind: ResultKind::Plain,
        },
        claimed,
    ))
}

pub(super) fn get_prompt(
    server: &Server,
    params: &mut Map<String, Value>,
    meta: &RequestMeta,
) -> Result<Call<crate::GetPromptResult>, Error> {
    let name = match params.get("name") {
        Some(Value::String(n)) => n,
        _ => return Err(Error::invalid_params("`prompts/get` needs a string `name`")),
    };
    let Some(def) = server.registry().prompt(name).filter(|d| View::of(server, meta).sees(&Item::Prompt(d))) else {
        return Err(Error::invalid_params(format!("unknown prompt: {name}")));
    };
    let arguments = arguments(params, "an object of strings")?;
    Ok(Call {
        method: "prompts/get",
        name: def.name.clone(),
        work: Work::Handler(def.handler),
        arguments,
        kind: ResultKind::Plain,
    })
}

pub(super) fn read_resource(
    server: &Server,
    params: &Map<String, Value>,
    meta: &mut RequestMeta,
) -> Result<Call<crate::ReadResourceResult>, Error> {
    let uri = match params.get("uri") {
        Some(Value::String(u)) => u.clone(),
        _ => return Err(Error::invalid_params("`resources/read` needs a string `uri`")),
    };
    let found = server.registry().resolve(&uri).filter(|(d, _)| View::of(server, meta).sees(&Item::Resource(d)));
    let Some((def, bound)) = found else {
        return Err(crate::handler::resource::not_found(&uri, meta.era));
    };
    let arguments: Map<String, Value> = bound.into_iter().map(|(k, v)| (k, Value::String(v))).collect();
    meta.resource_uri = Some(uri.into());
    meta.cache = def.cache;
    Ok(Call {
        method: "resources/read",
        name: def.name.clone(),
        work: Work::Handler(def.handler),
        arguments: Arguments::from(arguments),
        kind: ResultKind::Read,
    })
}

/// The relay that completes a reference another server serves (a mounted prompt or template), and the name it
/// runs under; `None` for the server's own. A reference the caller may not see is an error, as an unknown one.
pub(super) fn relayed_completion(
    server: &Server,
    params: &Map<String, Value>,
    meta: &RequestMeta,
) -> Result<Option<(Name, Handler<Value>)>, Error> {
    let Some(relay) = server.inner.handlers().relay_completion else { return Ok(None) };
    let registry = server.registry();
    if registry.relayed_completions.is_empty() {
        return Ok(None);
    }
    let reference = params.get("ref").unwrap_or(&Value::Null);
    let key = match reference.get("type").and_then(Value::as_str) {
        Some("ref/prompt") => reference["name"].as_str(),
        Some("ref/resource") => reference["uri"].as_str(),
        _ => None,
    };
    let Some(name) = key.and_then(|k| registry.relayed_completions.get(k).cloned()) else { return Ok(None) };
    complete_check(server, reference, meta)?;
    Ok(Some((name, relay)))
}

/// A prompt or template the caller may not see completes nothing: it is answered as one that does not exist.
fn complete_check(server: &Server, reference: &Value, meta: &RequestMeta) -> Result<(), Error> {
    let view = View::of(server, meta);
    if !view.rules.is_set() {
        return Ok(());
    }
    let registry = server.registry();
    match reference.get("type").and_then(Value::as_str) {
        Some("ref/prompt") => {
            let prompt = reference["name"].as_str().unwrap_or_default();
            if registry.prompt(prompt).is_some_and(|d| !view.sees(&Item::Prompt(&d))) {
                return Err(Error::invalid_params(format!("unknown prompt: {prompt}")));
            }
        }
        Some("ref/resource") => {
            let uri = reference["uri"].as_str().unwrap_or_default();
            if registry.templates.get(uri).is_some_and(|(l, _)| !view.sees(&Item::Resource(&l.def))) {
                return Err(Error::invalid_params(format!("unknown resource template: {uri}")));
            }
        }
        _ => {}
    }
    Ok(())
}

pub(super) fn complete_argument(
    server: &Server,
    params: &Map<String, Value>,
    meta: &RequestMeta,
) -> Result<Value, Error> {
    let reference = params.get("ref").ok_or_else(|| Error::invalid_params("`completion/complete` needs `ref`"))?;
    let argument =
        params.get("argument").ok_or_else(|| Error::invalid_params("`completion/complete` needs `argument`"))?;
    let (Some(name), Some(value)) =
        (argument.get("name").and_then(Value::as_str), argument.get("value").and_then(Value::as_str))
    else {
        return Err(Error::invalid_params("`argument` needs a string `name` and a string `value`"));
    };
    complete_check(server, reference, meta)?;
    let completer = server.registry().completer(reference, name)?;
    let values = completer.map(|f| f(value)).unwrap_or_default();
    Ok(crate::server::registry::completion_result(values))
}

/// `resources/list` when templates list resources at run time: the fixed resources, then each lister's, paginated
/// by offset.
pub(super) fn list_resources(ctx: &Context, mut args: Arguments) -> Result<Value, Error> {
    let registry = ctx.server().registry();
    let offset = match args.as_map_mut().remove("cursor") {
        None | Some(Value::Null) => 0,
        Some(Value::String(c)) => crate::server::registry::decode_cursor(ListKind::Resources, &c)?,
        Some(c) => return Err(Error::invalid_params(format!("invalid cursor {c}: cursors are strings"))),
    };
    let view = View::of(ctx.server(), ctx.meta());
    let mut items = match view.filters() {
        true => registry.fixed_resources_where(&|item| view.lists(item)),
        false => registry.fixed_resources(),
    };
    for def in registry.listers().into_iter().filter(|def| view.lists(&Item::Resource(def))) {
        ctx.check_cancelled().map_err(|e| Error::internal(e.to_string()))?;
        if let Some(list) = def.list {
            items.extend(list(ctx).into_iter().filter_map(|r| serde_json::to_value(r).ok()));
        }
    }
    if offset > items.len() || (offset == items.len() && offset > 0) {
        return Err(Error::invalid_params("invalid cursor: no such page"));
    }
    let end = (offset + registry.page_size()).min(items.len());
    let mut page = json!({ "resources": items[offset..end] });
    if end < items.len() {
        page["nextCursor"] = Value::String(crate::server::registry::encode_cursor(ListKind::Resources, end));
    }
    Ok(page)
}

//! What the Skills extension serves: `skills/list`, `skills/get`, `resources/directory/read`, and the skills'
//! files as the resource template `skill://{+path}` (listed in `resources/list`, read with `resources/read`). Each
//! finds the catalog in the server's state.

use std::sync::Arc;

use serde_json::{json, Value};

use super::catalog::Catalog;
use crate::context::Context;
use crate::handler::method::{MethodDef, MethodHandler};
use crate::handler::resource::{ResourceDef, ResourceHandler};
use crate::handler::tool::Arguments;
use crate::wire::error::Error;
use crate::wire::protocol::{ReadResourceResult, Resource, ResourceContents};
use crate::wire::skills::DIRECTORY_MIME;

/// How many skills, or children of a folder, one page holds.
const PAGE: usize = 100;
/// How long a client may reuse a list or an entry: a minute, for this client only (what it may see can depend on
/// who it is).
const CACHE: (u64, &str) = (60_000, "private");

type Reply<'a> = crate::base::future::BoxFuture<'a, Result<Value, Error>>;

fn catalog(ctx: &Context) -> Result<&Catalog, Error> {
    ctx.state::<Arc<Catalog>>()
        .map(|c| &**c)
        .ok_or_else(|| Error::internal("the Skills extension's catalog is missing from the server's state"))
}

fn string<'a>(args: &'a Arguments, key: &str, method: &str) -> Result<Option<&'a str>, Error> {
    match args.as_map().get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(Error::invalid_params(format!("`{method}`: `{key}` must be a string"))),
    }
}

fn with_cache(mut result: Value) -> Value {
    result["ttlMs"] = json!(CACHE.0);
    result["cacheScope"] = json!(CACHE.1);
    result
}

fn list(ctx: &Context, args: Arguments) -> Result<Value, Error> {
    let catalog = catalog(ctx)?;
    let cursor = string(&args, "cursor", "skills/list")?;
    let all: Vec<&Value> = catalog.skills.values().map(|(_, json)| json).collect();
    let (page, next) = Catalog::page(&all, cursor, PAGE)
        .map_err(|()| Error::invalid_params(format!("`skills/list`: the cursor {cursor:?} is not one it gave")))?;
    let mut result = json!({ "skills": page });
    if let Some(next) = next {
        result["nextCursor"] = json!(next);
    }
    Ok(with_cache(result))
}

fn get(ctx: &Context, args: Arguments) -> Result<Value, Error> {
    let catalog = catalog(ctx)?;
    let Some(uri) = string(&args, "uri", "skills/get")? else {
        return Err(Error::invalid_params("`skills/get` needs the `uri` of a skill's SKILL.md"));
    };
    match catalog.skills.get(uri) {
        Some((_, json)) => Ok(with_cache(json!({ "skill": json }))),
        None => Err(Error::invalid_params(format!("no skill is served at {uri}"))),
    }
}

fn directory_read(ctx: &Context, args: Arguments) -> Result<Value, Error> {
    let catalog = catalog(ctx)?;
    let Some(uri) = string(&args, "uri", "resources/directory/read")? else {
        return Err(Error::invalid_params("`resources/directory/read` needs the `uri` of a folder"));
    };
    let Some(children) = catalog.dirs.get(uri.trim_end_matches('/')) else {
        return Err(Error::invalid_params(format!("{uri} is not a folder of a skill")));
    };
    let children: Vec<Value> = children
        .iter()
        .map(|(child, is_dir)| {
            let name = child.rsplit('/').next().unwrap_or(child);
            let mime = if *is_dir { DIRECTORY_MIME } else { catalog.files.get(child).map_or("", |f| f.mime) };
            json!({ "uri": child, "name": name, "mimeType": mime })
        })
        .collect();
    let cursor = string(&args, "cursor", "resources/directory/read")?;
    let (page, next) = Catalog::page(&children, cursor, PAGE).map_err(|()| {
        Error::invalid_params(format!("`resources/directory/read`: the cursor {cursor:?} is not one it gave"))
    })?;
    let mut result = json!({ "resources": page });
    if let Some(next) = next {
        result["nextCursor"] = json!(next);
    }
    Ok(result)
}

fn ready(result: Result<Value, Error>) -> Reply<'static> {
    Box::pin(std::future::ready(result))
}

fn list_async(ctx: &Context, args: Arguments) -> Reply<'_> {
    ready(list(ctx, args))
}

fn get_async(ctx: &Context, args: Arguments) -> Reply<'_> {
    ready(get(ctx, args))
}

fn directory_read_async(ctx: &Context, args: Arguments) -> Reply<'_> {
    ready(directory_read(ctx, args))
}

/// The extension's methods.
pub(super) fn defs(directory_read: bool) -> Vec<MethodDef> {
    let here = concat!(file!(), ":", line!());
    let mut defs = vec![
        MethodDef::new("skills/list", MethodHandler::Async(list_async), here),
        MethodDef::new("skills/get", MethodHandler::Async(get_async), here),
    ];
    if directory_read {
        defs.push(MethodDef::new("resources/directory/read", MethodHandler::Async(directory_read_async), here));
    }
    defs
}

fn read(ctx: &Context, args: Arguments) -> crate::base::future::BoxFuture<'_, Result<ReadResourceResult, Error>> {
    let result = (|| {
        let catalog = catalog(ctx)?;
        let path = args.as_map().get("path").and_then(Value::as_str).unwrap_or_default();
        let uri = format!("skill://{path}");
        let Some(file) = catalog.files.get(&uri) else {
            return Err(Error::invalid_params(format!("no skill file is served at {uri}")));
        };
        let text = file.mime.starts_with("text/") || file.mime == "application/json" || file.mime == "application/yaml";
        let contents = match std::str::from_utf8(&file.bytes) {
            Ok(s) if text => ResourceContents::text(&uri, Some(file.mime), s),
            _ => ResourceContents::blob(&uri, Some(file.mime), &file.bytes),
        };
        Ok(ReadResourceResult::new(vec![contents]))
    })();
    Box::pin(std::future::ready(result))
}

fn list_files(ctx: &Context) -> Vec<Resource> {
    let Ok(catalog) = catalog(ctx) else { return Vec::new() };
    // The SKILL.md files first, so that a client looking for a skill finds one at once.
    let (skill_mds, others): (Vec<_>, Vec<_>) = catalog.files.iter().partition(|(uri, _)| uri.ends_with("/SKILL.md"));
    skill_mds.into_iter().chain(others).map(|(uri, file)| Catalog::descriptor(uri, file)).collect()
}

/// The skills' files, as one resource template.
pub(super) fn files() -> ResourceDef {
    ResourceDef::template(
        "skill://{+path}",
        "skill-files",
        ResourceHandler::Async(read),
        concat!(file!(), ":", line!()),
    )
    .description("The files of the skills this server publishes (io.modelcontextprotocol/skills).")
    .list(list_files)
}

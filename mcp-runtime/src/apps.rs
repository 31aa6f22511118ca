//! MCP Apps (`io.modelcontextprotocol/ui`, revision 2026-01-26): a tool declares an interface, an HTML page served
//! as a `ui://` resource (`text/html;profile=mcp-app`), that a host renders in a sandboxed frame and that talks to
//! the host over `postMessage` JSON-RPC (calling the server's tools through it).
//!
//! [`Apps`] is the extension, built on the public [`Extension`] API alone: each [`App`] is a resource (its HTML from
//! a string, a file read when the server is built, or a function called at each read), with its `_meta.ui`
//! (`csp`, `permissions`, `domain`, `prefersBorder`) on the listed resource and on its contents, and the tools it is
//! the interface of, whose `_meta.ui.resourceUri` names it (and `_meta.ui.visibility`: [`App::app_only_tool`] makes
//! a tool callable by the app and hidden from the model). A tool with an app still answers with a text result for
//! hosts that do not render apps.
//!
//! ```
//! use mcp::apps::{App, Apps};
//!
//! /// List the titles on hold.
//! #[mcp::tool]
//! fn list_holds() -> String {
//!     "Dune".into()
//! }
//!
//! let holds = App::html("ui://bookshop/holds", "<!doctype html><p>Your holds</p>")
//!     .name("Holds")
//!     .prefers_border(true)
//!     .for_tool("list_holds");
//! let server = mcp::Server::builder().tool::<list_holds>().extension(Apps::new().app(holds)).build().unwrap();
//! assert_eq!(server.tools_list()["tools"][0]["_meta"]["ui"]["resourceUri"], "ui://bookshop/holds");
//! ```

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde_json::{json, Map, Value};

use crate::base::name::Name;
use crate::base::sync::Unpoisoned;
use crate::builder::extension::Extension;
use crate::builder::ServerBuilder;
use crate::context::Context;
use crate::handler::resource::{ResourceDef, ResourceHandler};
use crate::handler::tool::Arguments;
use crate::wire::error::Error;
use crate::wire::protocol::{ReadResourceResult, ResourceContents};

pub use crate::wire::apps::{EXTENSION, MIME_TYPE};

/// Where an app's HTML comes from.
#[derive(Clone)]
enum Source {
    Html(Arc<str>),
    File(PathBuf),
    Made(fn() -> String),
}

/// One interface: a `ui://` resource of HTML, and the tools it belongs to.
#[derive(Clone)]
pub struct App {
    uri: String,
    name: Option<String>,
    description: Option<String>,
    source: Source,
    /// `_meta.ui` of the resource.
    ui: Map<String, Value>,
    /// The tools it is the interface of, with who may see each (`None`: the default, model and app).
    tools: Vec<(String, Option<Vec<&'static str>>)>,
}

impl std::fmt::Debug for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App").field("uri", &self.uri).field("ui", &self.ui).finish_non_exhaustive()
    }
}

impl App {
    fn new(uri: impl Into<String>, source: Source) -> App {
        App { uri: uri.into(), name: None, description: None, source, ui: Map::new(), tools: Vec::new() }
    }

    /// An app whose page is `html`, at `uri` (`ui://<server>/<view>`).
    pub fn html(uri: impl Into<String>, html: impl Into<String>) -> App {
        App::new(uri, Source::Html(Arc::from(html.into())))
    }

    /// An app whose page is the file at `path`, read when the server is built (a file that cannot be read is a
    /// build error naming it).
    pub fn file(uri: impl Into<String>, path: impl Into<PathBuf>) -> App {
        App::new(uri, Source::File(path.into()))
    }

    /// An app whose page `make` writes at each read.
    pub fn from_fn(uri: impl Into<String>, make: fn() -> String) -> App {
        App::new(uri, Source::Made(make))
    }

    /// Its name in `resources/list` (default: its URI's last segment).
    pub fn name(mut self, name: impl Into<String>) -> App {
        self.name = Some(name.into());
        self
    }

    /// What it is, in `resources/list`.
    pub fn description(mut self, description: impl Into<String>) -> App {
        self.description = Some(description.into());
        self
    }

    /// The origins its page may reach (`csp.connectDomains`: fetch, WebSocket) and load from
    /// (`csp.resourceDomains`: scripts, styles, images); none by default, so the host's sandbox allows neither.
    pub fn csp(mut self, connect_domains: &[&str], resource_domains: &[&str]) -> App {
        self.ui.insert("csp".into(), json!({ "connectDomains": connect_domains, "resourceDomains": resource_domains }));
        self
    }

    /// Browser permissions it asks the host for (`camera`, `microphone`, `geolocation`, `clipboardWrite`).
    pub fn permissions(mut self, permissions: &[&str]) -> App {
        let asked: Map<String, Value> = permissions.iter().map(|p| ((*p).to_owned(), json!({}))).collect();
        self.ui.insert("permissions".into(), Value::Object(asked));
        self
    }

    /// The dedicated origin it asks the host to render it under.
    pub fn domain(mut self, domain: impl Into<String>) -> App {
        self.ui.insert("domain".into(), Value::String(domain.into()));
        self
    }

    /// Whether it prefers the host to draw a border around it.
    pub fn prefers_border(mut self, prefers: bool) -> App {
        self.ui.insert("prefersBorder".into(), Value::Bool(prefers));
        self
    }

    /// Makes it the interface of the tool `name`: the tool's `_meta.ui.resourceUri` names it.
    pub fn for_tool(mut self, name: impl Into<String>) -> App {
        self.tools.push((name.into(), None));
        self
    }

    /// The same, for a tool only the app calls (through the host): `_meta.ui.visibility` is `["app"]`, so hosts
    /// leave it out of what the model sees; the server still lists it and serves its calls.
    pub fn app_only_tool(mut self, name: impl Into<String>) -> App {
        self.tools.push((name.into(), Some(vec!["app"])));
        self
    }

    /// `_meta` with `ui` in it, when there is anything to say.
    fn meta(&self) -> Option<Map<String, Value>> {
        (!self.ui.is_empty()).then(|| {
            let mut meta = Map::new();
            meta.insert("ui".into(), Value::Object(self.ui.clone()));
            meta
        })
    }
}

/// The Apps extension: add it with [`ServerBuilder::extension`](crate::ServerBuilder::extension).
#[derive(Debug, Default)]
pub struct Apps {
    apps: Vec<App>,
    /// What `setup` found wrong (a tool that is not there), reported by `check`.
    errors: Mutex<Vec<String>>,
}

/// An app's page as served: a file was read when the server was built.
enum Page {
    Html(Arc<str>),
    Made(fn() -> String),
}

/// The apps a server serves, by URI, in its state: each page and its `_meta`.
struct Served(HashMap<String, (Page, Option<Map<String, Value>>)>);

impl Apps {
    /// No apps yet.
    pub fn new() -> Apps {
        Apps::default()
    }

    /// Adds an app.
    pub fn app(mut self, app: App) -> Apps {
        self.apps.push(app);
        self
    }
}

/// A string that lives as long as the program: resource definitions hold `'static` text, and an app is made once
/// per server.
fn forever(text: &str) -> &'static str {
    Box::leak(text.to_owned().into_boxed_str())
}

fn read(ctx: &Context, _: Arguments) -> crate::base::future::BoxFuture<'_, Result<ReadResourceResult, Error>> {
    let result = (|| {
        let uri = ctx.meta().resource_uri.clone().unwrap_or_else(|| Arc::from(""));
        let served = ctx.state::<Served>().ok_or_else(|| Error::internal("the apps are missing from the state"))?;
        let Some((page, meta)) = served.0.get(&*uri) else {
            return Err(Error::invalid_params(format!("no app is served at {uri}")));
        };
        let html = match page {
            Page::Html(html) => html.to_string(),
            Page::Made(make) => make(),
        };
        let mut contents = ResourceContents::text(&*uri, Some(MIME_TYPE), html);
        if let Some(meta) = meta {
            contents = contents.with_meta(meta.clone());
        }
        Ok(ReadResourceResult::new(vec![contents]))
    })();
    Box::pin(std::future::ready(result))
}

impl Extension for Apps {
    fn id(&self) -> &str {
        EXTENSION
    }

    fn check(&self) -> Result<(), String> {
        match self.errors.locked().first() {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    fn setup(&self, mut builder: ServerBuilder) -> ServerBuilder {
        let mut errors = self.errors.locked();
        let mut served = HashMap::new();
        let tools: Vec<Name> = builder.tool_defs().iter().map(|t| t.name.clone()).collect();
        for app in &self.apps {
            if !app.uri.starts_with("ui://") {
                errors.push(format!("the app at `{}` needs a ui:// URI", app.uri));
                continue;
            }
            let page = match &app.source {
                Source::Html(html) => Page::Html(html.clone()),
                Source::Made(make) => Page::Made(*make),
                Source::File(path) => match std::fs::read_to_string(path) {
                    Ok(html) => Page::Html(Arc::from(html)),
                    Err(e) => {
                        errors.push(format!("the app at {}: its file {} cannot be read: {e}", app.uri, path.display()));
                        continue;
                    }
                },
            };
            let name = app.name.clone().unwrap_or_else(|| app.uri.rsplit('/').next().unwrap_or(&app.uri).to_owned());
            let mut def = ResourceDef::fixed("", "", ResourceHandler::Async(read), concat!(file!(), ":", line!()))
                .mime_type(MIME_TYPE);
            (def.uri, def.name) = (Name::from(app.uri.clone()), Name::from(name));
            if let Some(description) = &app.description {
                def = def.description(forever(description));
            }
            builder = builder.resource_def(def);
            if let Some(meta) = app.meta() {
                builder = builder.resource_meta(app.uri.clone(), meta);
            }
            for (tool, visibility) in &app.tools {
                if !tools.iter().any(|t| t == tool.as_str()) {
                    errors.push(format!(
                        "the app at {} is the interface of the tool `{tool}`, which the server does not have (add \
                         the tool before the extension is built)",
                        app.uri
                    ));
                    continue;
                }
                let mut ui = json!({ "resourceUri": app.uri });
                if let Some(visibility) = visibility {
                    ui["visibility"] = json!(visibility);
                }
                let mut meta = Map::new();
                meta.insert("ui".into(), ui);
                // The flat key of earlier hosts, which some still read.
                meta.insert("ui/resourceUri".into(), Value::String(app.uri.clone()));
                builder = builder.tool_meta(tool.clone(), meta);
            }
            served.insert(app.uri.clone(), (page, app.meta()));
        }
        builder.state(Served(served))
    }
}

//! The dispatcher: what both protocol eras share. A [`Connection`] owns the in-flight table (request id to its
//! state, for cancellation) and the requests this server sent to the client; [`dispatch`] serves the methods both
//! eras have (`tools/*`, `prompts/*`, `resources/list|read|templates/list`, `completion/complete`, custom methods)
//! from the server's handlers, once an era front has turned the request into a [`Request`] with its metadata.
//!
//! The rule that a cancelled request never gets a response lives here: the response path and the cancel path race
//! for the request's slot, and only the first one acts.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::base::name::Name;
pub(crate) use crate::base::sink::{FrameSink, Sink};
use crate::context::{EraState, InFlight, Link, RequestMeta};
use crate::handler::tool::{Arguments, Handler};
use crate::server::registry::ListKind;
use crate::server::visibility::Item;
use crate::server::Server;
use crate::wire::error::Error;
use crate::wire::jsonrpc::{Frame, RequestId};
use crate::wire::protocol::WireResult;

mod connection;
mod methods;
mod run;

use methods::{call_tool, complete_argument, get_prompt, list_resources, read_resource, relayed_completion};

#[cfg(feature = "http")]
pub(crate) use connection::session_key_of;
pub(crate) use connection::Connection;

/// Where a message came from and where its replies go: the sink, and on HTTP the request's headers and caller.
pub(crate) struct Origin {
    pub sink: Sink,
    pub http: Option<Arc<crate::context::HttpRequest>>,
}

impl FrameSink for Origin {
    fn send(&self, frame: Frame) {
        self.sink.send(frame)
    }
    fn send_droppable(&self, frame: Frame) {
        self.sink.send_droppable(frame)
    }
    fn finish(&self, frame: Frame) {
        self.sink.finish(frame)
    }
    fn close(&self) {
        self.sink.close()
    }
}

/// A request an era front has checked and described, ready for the dispatcher.
pub(crate) struct Request {
    pub id: RequestId,
    pub method: String,
    pub params: Map<String, Value>,
    /// A `tools/call`'s `arguments`, kept as text (when they came as an object and were read by
    /// [`Incoming::parse`](crate::wire::jsonrpc::Incoming::parse)); otherwise they are in `params`.
    pub arguments: Option<Box<serde_json::value::RawValue>>,
    pub meta: RequestMeta,
    pub era: EraState,
    /// A `tools/call`'s tool, when the front found it already.
    pub tool: Option<std::sync::Arc<crate::handler::tool::ToolDef>>,
}

/// What a request runs.
pub(crate) struct Call<R> {
    /// The request's method (for its tracing span).
    pub method: &'static str,
    pub name: Name,
    pub work: Work<R>,
    pub arguments: Arguments,
    /// How the result is written in the request's era (2026 results carry `resultType` and server info).
    pub kind: ResultKind,
}

/// What answers a call: its handler, or (a request answered inline, on its way through the layers) its result.
pub(crate) enum Work<R> {
    Handler(Handler<R>),
    /// Boxed: a result would make every call's future larger (a call is moved into its task whole).
    Ready(Box<Result<R, Error>>),
    /// What an era front answers by itself (`initialize`, `ping`, ...), done at the bottom of the layers: a layer
    /// that refuses the request keeps it from taking effect.
    Front(Box<dyn FnOnce() -> Result<R, Error> + Send>),
}

/// What kind of result a call produces, for the era's decoration of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ResultKind {
    /// A tool, a prompt or a custom method: `resultType` and server info in the 2026 era.
    Plain,
    /// `resources/read`: cacheable, so caching hints too.
    Read,
    /// A list: cacheable.
    List,
    /// Already in its era's form (a stored list page, a decorated completion): written as it is.
    Encoded,
}

/// What a request an era front answers by itself is, as the layers see it: its params (`arguments`), metadata and
/// era, made only when there are layers to see them.
pub(crate) type FrontRequest = (Map<String, Value>, RequestMeta, EraState);

/// Answers a request its era front serves by itself (`initialize`, `ping`, `logging/setLevel`,
/// `resources/subscribe`, `resources/unsubscribe`, `server/discover`). With no layer, at once; with layers,
/// through them as any other request, `answer` running at the bottom of the stack.
pub(crate) fn answer_front(
    conn: &Arc<Connection>,
    origin: &Origin,
    (id, method): (RequestId, &'static str),
    request: impl FnOnce() -> FrontRequest,
    answer: impl FnOnce() -> Result<Value, Error> + Send + 'static,
) {
    if conn.server().inner.handlers().layers.is_none() {
        let Some(metrics) = conn.server().inner.metrics() else { return respond(origin, &id, answer()) };
        let started = std::time::Instant::now();
        let answered = answer();
        let labels = crate::metrics::Request {
            method,
            target: None,
            version: request().1.era.name(),
            transport: crate::metrics::Transport::of(origin.http.is_some()),
        };
        metrics.answered(labels, started, crate::metrics::Ended::of(&answered));
        return respond(origin, &id, answered);
    }
    let (arguments, mut meta, era) = request();
    meta.http = origin.http.clone();
    let call = Call {
        method,
        name: Name::new(method),
        work: Work::Front(Box::new(move || answer().map(ListResult::Value))),
        arguments: Arguments::from(arguments),
        kind: ResultKind::Encoded,
    };
    let request = Arc::new(InFlight::new(id.clone(), meta, conn.clone(), origin.sink.clone(), era));
    if let Err(e) = conn.start(request, call) {
        respond(origin, &id, Err::<(), _>(e));
    }
}

/// Serves a method both eras share. `None` if the method is not one of them (the front answers it).
pub(crate) fn dispatch(conn: &Arc<Connection>, request: Request, origin: &Origin) -> Option<()> {
    // Two copies: without metrics, none of their code is there.
    match conn.server().inner.metrics() {
        None => serve::<false>(conn, request, origin),
        Some(_) => serve::<true>(conn, request, origin),
    }
}

/// [`dispatch`], recording what it answers itself in the server's metrics when `MEASURED`.
fn serve<const MEASURED: bool>(conn: &Arc<Connection>, request: Request, origin: &Origin) -> Option<()> {
    let server = conn.server().clone();
    let Request { id, method, mut params, arguments, mut meta, era, tool } = request;
    meta.http = origin.http.clone();
    // With metrics: when it arrived, for a request answered here (inline, or refused); a handler's run times its own.
    let arrived = MEASURED.then(std::time::Instant::now);
    let at = Serving { conn, server: &server, origin, id: &id, arrived, era: meta.era };
    // With metrics, the tool or prompt a `tools/call` or `prompts/get` refused asked for.
    let mut refused = None;
    let started = match method.as_str() {
        // Lists and completions are answered inline, from stored pages; with layers they go through the stack like
        // any other request.
        "tools/list" | "prompts/list" | "resources/templates/list" | "resources/list"
            if method != "resources/list" || server.registry().listers().is_empty() =>
        {
            let (name, kind) = listed(&method);
            at.inline(name, list(&**conn, &server, kind, &params, &era, &meta), (params, meta, era))
        }
        "resources/list" => {
            // Templates list their resources at run time: a request like any other, cancellable.
            let work = Work::Handler(Handler::Blocking(list_resources));
            at.start(Call::of("resources/list", work, params, ResultKind::List), meta, era)
        }
        "tools/call" => call_tool(&server, tool, (&mut params, arguments), &meta)
            .and_then(|(call, claimed)| {
                let request = at.in_flight(meta, era, call.name.clone());
                if let Some(claimed) = claimed {
                    let _ = request.claim.set(Box::new(claimed));
                }
                conn.start(request, call)
            })
            .inspect_err(|_| {
                refused = arrived.and_then(|_| served(&params, |n| server.registry().tool(n).map(|d| d.name.clone())))
            }),
        "prompts/get" => get_prompt(&server, &mut params, &meta)
            .and_then(|call| conn.start(at.in_flight(meta, era, call.name.clone()), call))
            .inspect_err(|_| {
                refused = arrived.and_then(|_| served(&params, |n| server.registry().prompt(n).map(|d| d.name)))
            }),
        "resources/read" => read_resource(&server, &params, &mut meta)
            .and_then(|call| conn.start(at.in_flight(meta, era, call.name.clone()), call)),
        "completion/complete" => match relayed_completion(&server, &params, &meta) {
            // Another server's prompt or template: its completion is a request to it, cancellable.
            Ok(Some((name, handler))) => {
                let call =
                    Call { name, ..Call::of("completion/complete", Work::Handler(handler), params, ResultKind::Plain) };
                at.start(call, meta, era)
            }
            Ok(None) => {
                let result = complete_argument(&server, &params, &meta)
                    .map(|r| ListResult::Value(era.decorate(&**conn, r, None)));
                at.inline("completion/complete", result, (params, meta, era))
            }
            Err(e) => Err(e),
        },
        // Custom methods, then the extensions' (the Tasks extension's `tasks/*` among them).
        m => at.method(m, params, meta, era)?,
    };
    // An error here is one to answer: the request was refused before it started.
    if let Err(e) = started {
        if let Some(arrived) = arrived {
            let labels = crate::metrics::Request::new(
                method_label(&server, &method),
                refused,
                at.era.name(),
                origin.http.is_some(),
            );
            answered_inline(&server, labels, arrived, Some(&e));
        }
        respond(origin, &id, Err::<(), _>(e));
    }
    Some(())
}

/// What [`serve`] serves one request with: the connection it came on, where its answer goes, its id, and (with
/// metrics) when it arrived.
struct Serving<'a> {
    conn: &'a Arc<Connection>,
    server: &'a Server,
    origin: &'a Origin,
    id: &'a RequestId,
    arrived: Option<std::time::Instant>,
    era: crate::context::Era,
}

impl Serving<'_> {
    /// The request's in-flight record, running `name`.
    fn in_flight(&self, meta: RequestMeta, era: EraState, name: Name) -> Arc<InFlight> {
        Arc::new(self.record(meta, era, name))
    }

    fn record(&self, meta: RequestMeta, era: EraState, name: Name) -> InFlight {
        InFlight::named(self.id.clone(), meta, self.conn.clone(), self.origin.sink.clone(), era, name)
    }

    /// Starts `call` as the request.
    fn start<R: WireResult + Send + 'static>(
        &self,
        call: Call<R>,
        meta: RequestMeta,
        era: EraState,
    ) -> Result<(), Error> {
        self.conn.start(self.in_flight(meta, era, call.name.clone()), call)
    }

    /// Starts a custom method, or an extension's (the Tasks extension's `tasks/*` among them); `None` if none has
    /// that name. A long-lived one (a subscription stream) is marked so in its in-flight record.
    fn method(
        &self,
        method: &str,
        params: Map<String, Value>,
        meta: RequestMeta,
        era: EraState,
    ) -> Option<Result<(), Error>> {
        let handlers = self.server.inner.handlers();
        let def = handlers.methods.get(method).or_else(|| handlers.extension_methods.get(method))?;
        let call = Call::of(def.name, Work::Handler(def.handler), params, ResultKind::Plain);
        Some(if def.long_lived {
            self.conn.start(Arc::new(self.record(meta, era, call.name.clone()).long_lived()), call)
        } else {
            self.start(call, meta, era)
        })
    }

    /// Answers a list or a completion inline (no layers), or through the layers as a call whose result is ready.
    fn inline(
        &self,
        name: &'static str,
        result: Result<ListResult, Error>,
        request: FrontRequest,
    ) -> Result<(), Error> {
        let (params, meta, era) = request;
        if self.server.inner.handlers().layers.is_none() {
            if let (Some(arrived), Ok(_)) = (self.arrived, &result) {
                let labels = crate::metrics::Request::new(name, None, self.era.name(), self.origin.http.is_some());
                answered_inline(self.server, labels, arrived, None);
            }
            return result.map(|r| finish_inline(self.origin, self.id, r));
        }
        self.start(Call::of(name, Work::Ready(Box::new(result)), params, ResultKind::Encoded), meta, era)
    }
}

/// A list method's static name and what it lists.
fn listed(method: &str) -> (&'static str, ListKind) {
    match method {
        "tools/list" => ("tools/list", ListKind::Tools),
        "prompts/list" => ("prompts/list", ListKind::Prompts),
        "resources/templates/list" => ("resources/templates/list", ListKind::Templates),
        _ => ("resources/list", ListKind::Resources),
    }
}

impl<R> Call<R> {
    /// A call of `method` under the method's own name, its params the handler's arguments.
    fn of(method: &'static str, work: Work<R>, params: Map<String, Value>, kind: ResultKind) -> Call<R> {
        Call { method, name: Name::new(method), work, arguments: Arguments::from(params), kind }
    }
}

/// With metrics, a request answered without a handler's run: with a result, or refused with `error`.
#[cold]
#[inline(never)]
fn answered_inline(
    server: &Server,
    labels: crate::metrics::Request,
    arrived: std::time::Instant,
    error: Option<&Error>,
) {
    if let Some(metrics) = server.inner.metrics() {
        let ended = error
            .map_or(crate::metrics::Ended::Result { tool_error: false }, |e| crate::metrics::Ended::Error(e.code.0));
        metrics.answered(labels, arrived, ended);
    }
}

/// The tool or prompt a request's `name` param asks for, as a metric's label: the server's name for it when it
/// serves it, else `_OTHER` (any name a client sends).
fn served(params: &Map<String, Value>, find: impl FnOnce(&str) -> Option<Name>) -> Option<Name> {
    Some(params.get("name").and_then(Value::as_str).and_then(find).unwrap_or(Name::new(crate::metrics::OTHER)))
}

/// A method the dispatcher serves, as a metric's label: its static name.
fn method_label(server: &Server, method: &str) -> &'static str {
    const SHARED: [&str; 8] = [
        "tools/list",
        "tools/call",
        "prompts/list",
        "prompts/get",
        "resources/list",
        "resources/read",
        "resources/templates/list",
        "completion/complete",
    ];
    if let Some(known) = SHARED.iter().find(|m| **m == method) {
        return known;
    }
    let inner = &server.inner;
    inner
        .handlers()
        .methods
        .get(method)
        .or_else(|| inner.handlers().extension_methods.get(method))
        .map_or(crate::metrics::OTHER, |d| d.name)
}

fn finish_inline(origin: &Origin, id: &RequestId, result: ListResult) {
    let frame = match result {
        ListResult::Raw(raw) => Frame::result(id, &raw),
        ListResult::Value(v) => Frame::result(id, &v),
    };
    origin.finish(frame);
}

/// A list page: stored bytes, or a value made for this request.
pub(crate) enum ListResult {
    Raw(Arc<serde_json::value::RawValue>),
    Value(Value),
}

impl serde::Serialize for ListResult {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ListResult::Raw(raw) => raw.serialize(serializer),
            ListResult::Value(v) => v.serialize(serializer),
        }
    }
}

impl WireResult for ListResult {
    fn payload_len(&self) -> usize {
        match self {
            ListResult::Raw(raw) => raw.get().len(),
            ListResult::Value(_) => 0,
        }
    }

    fn spliceable(&self) -> bool {
        match self {
            ListResult::Raw(_) => false,
            ListResult::Value(v) => v.spliceable(),
        }
    }

    fn is_tool_error(&self) -> bool {
        matches!(self, ListResult::Value(v) if v.is_tool_error())
    }
}

fn list(
    link: &dyn Link,
    server: &Server,
    kind: ListKind,
    params: &Map<String, Value>,
    era: &EraState,
    meta: &RequestMeta,
) -> Result<ListResult, Error> {
    let cursor = match params.get("cursor") {
        None | Some(Value::Null) => None,
        Some(Value::String(c)) => Some(c.as_str()),
        Some(c) => return Err(Error::invalid_params(format!("invalid cursor {c}: cursors are strings"))),
    };
    // The stored pages come in two forms: as they are, and with the members every result of the request's era
    // starts with.
    let v2026 = era.result_prefix(link).is_some();
    let view = View::of(server, meta);
    if view.filters() {
        return server.registry().page_where(kind, cursor, v2026, &|item| view.lists(item)).map(ListResult::Raw);
    }
    server.registry().page(kind, cursor, v2026).map(ListResult::Raw)
}

/// What one caller may see: what the visibility rules let them, and, in lists, only what their scopes grant when
/// the server hides the rest (`Authorization::hide_unauthorized`; a call beyond them is answered 403, for step-up).
struct View<'a> {
    server: &'a Server,
    meta: &'a RequestMeta,
    rules: &'a crate::server::visibility::Visibility,
}

impl<'a> View<'a> {
    fn of(server: &'a Server, meta: &'a RequestMeta) -> View<'a> {
        View { server, meta, rules: &server.inner.served().visibility }
    }

    /// The scopes of the caller, when the server hides from lists what they cannot use.
    fn granted(&self) -> Option<&'a [String]> {
        let hides = self.server.inner.auth().is_some_and(crate::auth::Guard::hides_unauthorized);
        match (hides, self.meta.http.as_ref().and_then(|h| h.auth.as_ref())) {
            (true, Some(auth)) => Some(auth.scopes.as_slice()),
            (true, None) => Some(&[][..]),
            (false, _) => None,
        }
    }

    /// Whether lists are made for this caller (else they are the stored pages).
    fn filters(&self) -> bool {
        self.rules.is_set() || self.granted().is_some()
    }

    /// Whether the item is in this caller's lists.
    fn lists(&self, item: &Item<'_>) -> bool {
        let granted = self.granted().is_none_or(|g| item.scopes().iter().all(|s| g.iter().any(|x| x == s)));
        granted && self.sees(item)
    }

    /// Whether this caller may use the item at all (hidden: as if it did not exist). One check of an empty list
    /// when the server has no rules.
    fn sees(&self, item: &Item<'_>) -> bool {
        !self.rules.is_set() || self.rules.sees(self.meta, item)
    }
}

/// Sends a reply to a request that is answered inline.
pub(crate) fn respond(sink: &dyn FrameSink, id: &RequestId, result: Result<impl serde::Serialize, Error>) {
    let frame = match result {
        Ok(r) => Frame::result(id, &r),
        Err(e) => Frame::error(Some(id), &e),
    };
    sink.finish(frame);
}

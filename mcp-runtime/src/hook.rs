//! Hooks: where an extension changes how a core method is answered. Today one, on `tools/call`: the Tasks extension
//! turns a call into a task through it, and any extension ([`Extension::tool_call_hook`]) can put its own beside it.
//!
//! A hook sees each `tools/call` once its tool is found, before the server's layers and the tool run. It may
//! **claim** the call (keeping anything it wants for later), leave it alone, or refuse it with an error. The claim is
//! the hook's own: it gets it back when the call is about to run ([`ToolCallHook::begin`], inside the request, with
//! its cancellation), and the tool's handler can read it too ([`Context::claim`]). The first hook that claims a call
//! has it; extensions are asked in the order they were added (Tasks first).
//!
//! A hook may also **take the call over** ([`Context::answer_early`]): the client is answered at once, the handler
//! runs on, and its outcome goes to the hook's [`finish`](ToolCallHook::finish) instead. That is how a call becomes
//! a task: the Tasks hook answers with the task, and its `finish` writes the outcome into the task's record.
//!
//! [`Extension::tool_call_hook`]: crate::extension::Extension::tool_call_hook

use std::any::Any;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::base::future::BoxFuture;
use crate::context::{Context, RequestMeta};
use crate::handler::tool::{Arguments, ToolDef};
use crate::wire::error::Error;

/// What a hook keeps of a call it claims: anything of its own, read back with [`Context::claim`].
pub type Claim = Box<dyn Any + Send + Sync>;

/// What a [`ToolCallHook`] sees of a `tools/call` before its tool runs.
#[non_exhaustive]
pub struct ToolCall<'a> {
    /// The tool's definition: its name, its task settings, its scopes, ...
    pub tool: &'a ToolDef,
    /// The request's `params` but its `arguments`: `name`, `_meta`, and members of an extension's own (the
    /// 2025-11-25 `task`).
    pub params: &'a Map<String, Value>,
    /// The tool's arguments ([`Arguments::as_map`] reads them as values).
    pub arguments: &'a Arguments,
    /// The request's metadata: its era, the client and the extensions it declared, `_meta`, the HTTP request.
    pub meta: &'a RequestMeta,
}

/// A hook on `tools/call`, given by an extension ([`Extension::tool_call_hook`](crate::extension::Extension::tool_call_hook)).
///
/// ```
/// use mcp::hook::{Claim, ToolCall, ToolCallHook};
/// use mcp::extension::Extension;
/// use mcp::Context;
/// use std::sync::Arc;
///
/// /// Counts the calls that ask for a receipt (`"receipt": true` in `params`), and refuses a receipt for a tool
/// /// whose name starts with `secret_`.
/// struct Receipts;
///
/// /// What a claimed call keeps: the tool's name.
/// struct Receipt(mcp::Name);
///
/// impl ToolCallHook for Receipts {
///     fn claim(&self, call: &ToolCall<'_>) -> Result<Option<Claim>, mcp::Error> {
///         if call.params.get("receipt") != Some(&serde_json::Value::Bool(true)) {
///             return Ok(None);
///         }
///         if call.tool.name.starts_with("secret_") {
///             return Err(mcp::Error::invalid_params("no receipts for secret tools"));
///         }
///         Ok(Some(Box::new(Receipt(call.tool.name.clone()))))
///     }
/// }
///
/// struct ReceiptExtension;
///
/// impl Extension for ReceiptExtension {
///     fn id(&self) -> &str {
///         "com.example/receipts"
///     }
///     fn tool_call_hook(&self) -> Option<Arc<dyn ToolCallHook>> {
///         Some(Arc::new(Receipts))
///     }
/// }
///
/// /// Echo the text back, with a receipt if one was asked for.
/// #[mcp::tool]
/// async fn echo(text: String, ctx: &Context) -> String {
///     match ctx.claim::<Receipt>() {
///         Some(Receipt(tool)) => format!("{text} (receipt: {tool})"),
///         None => text,
///     }
/// }
///
/// let server = mcp::Server::builder().tool::<echo>().extension(ReceiptExtension).build().unwrap();
/// # let _ = server;
/// ```
pub trait ToolCallHook: Send + Sync + 'static {
    /// Whether the extension takes up this call: `Ok(Some(claim))` claims it, `Ok(None)` leaves it to the tool as
    /// usual, `Err` answers the call with that error before anything runs.
    fn claim(&self, call: &ToolCall<'_>) -> Result<Option<Claim>, Error>;

    /// Runs when a call this hook claimed is about to run its tool, inside the request: after the server's layers
    /// let it through. `Err` answers the call with that error instead of running the tool; a cancel that comes
    /// while it runs stops the call before the tool runs. Nothing by default.
    fn begin<'a>(&'a self, ctx: &'a Context) -> BoxFuture<'a, Result<(), Error>> {
        let _ = ctx;
        Box::pin(std::future::ready(Ok(())))
    }

    /// The outcome of a call this hook took over ([`Context::answer_early`]): the handler's result or error, or
    /// `None` when it was stopped before it ended (the server shutting down, or the hook's own cancel). The client
    /// got its answer when the hook took the call; this is where the rest goes (Tasks: into the task's record).
    /// Nothing by default.
    fn finish<'a>(&'a self, ctx: &'a Context, outcome: Option<Result<Value, Error>>) -> BoxFuture<'a, ()> {
        let _ = (ctx, outcome);
        Box::pin(std::future::ready(()))
    }
}

/// A claim and the hook that made it, as a request keeps it (in `InFlight::claim`, which the layers below this one
/// cannot name).
pub(crate) struct Claimed {
    pub hook: Arc<dyn ToolCallHook>,
    pub claim: Claim,
    /// Whether the hook took the call over: its request is answered, and the handler's outcome goes to the hook.
    pub taken: AtomicBool,
}

impl Claimed {
    pub(crate) fn taken(&self) -> bool {
        self.taken.load(Ordering::Acquire)
    }

    pub(crate) fn take(&self) -> bool {
        !self.taken.swap(true, Ordering::AcqRel)
    }
}

/// Asks each hook in turn whether it claims a call; the first claim wins.
pub(crate) fn claim(hooks: &[Arc<dyn ToolCallHook>], call: &ToolCall<'_>) -> Result<Option<Claimed>, Error> {
    for hook in hooks {
        if let Some(claim) = hook.claim(call)? {
            return Ok(Some(Claimed { hook: hook.clone(), claim, taken: AtomicBool::new(false) }));
        }
    }
    Ok(None)
}

impl Context {
    /// What an extension's [`ToolCallHook`] kept of this call when it claimed it, if it did and it is a `T`.
    pub fn claim<T: Any>(&self) -> Option<&T> {
        claimed(self.in_flight()).and_then(|c| c.claim.downcast_ref())
    }

    /// Takes this call over for the hook that claimed it: the client is answered now with `result` (a
    /// `tools/call` result, which the request's era writes as it writes any), and the handler goes on running; its
    /// outcome goes to the hook's [`finish`](ToolCallHook::finish) instead of the client. From here the client's
    /// cancel no longer reaches the handler. For a hook's [`begin`](ToolCallHook::begin), or the handler itself.
    ///
    /// `false` when there is nothing to take: the call was not claimed, it was already taken, or it was cancelled
    /// before the answer could go (the handler is then stopped, and `finish` gets `None`).
    ///
    /// A call taken over is no longer counted among the connection's requests in flight: a hook that takes calls
    /// over bounds how many it holds itself (refusing a claim when it has too many), as Tasks does per client. Nor
    /// does the connection's end stop it; one still running when the server stops is abandoned at the shutdown
    /// deadline, without a `finish` (Tasks cancels its own with their connection, and when the server stops).
    pub fn answer_early(&self, result: Value) -> bool {
        let request = self.in_flight();
        if !claimed(request).is_some_and(Claimed::take) {
            return false;
        }
        request.link.forget(request);
        let result = request.era.decorate(&*request.link, result, None);
        request.finish(crate::wire::jsonrpc::Frame::result(&request.id, &result))
    }
}

/// The claim a request holds, if a hook made one.
pub(crate) fn claimed(request: &crate::context::InFlight) -> Option<&Claimed> {
    request.claim.get().and_then(|c| c.downcast_ref())
}

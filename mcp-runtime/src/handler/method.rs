//! Custom methods: JSON-RPC methods the MCP specification does not define, served by `#[mcp::method]` functions.

use serde::Serialize;
use serde_json::Value;

use crate::base::cancel::Cancelled;
use crate::base::name::Name;
use crate::handler::tool::{Handler, Injected, Json};
use crate::wire::error::{Error, ErrorCode};

/// How a custom method runs.
pub type MethodHandler = Handler<Value>;

/// Everything known about a custom method at compile time; `#[mcp::method]` emits one as a constant.
///
/// Written by hand, its handler gets the request's `params` object and answers with a JSON object:
///
/// ```
/// use mcp::Context;
/// use mcp::handler::{Arguments, MethodDef, MethodHandler};
/// use serde_json::{json, Value};
///
/// fn stock(_: &Context, params: Arguments) -> Result<Value, mcp::Error> {
///     let title = params.as_map().get("title").and_then(Value::as_str).ok_or_else(|| mcp::Error::invalid_params("no title"))?;
///     Ok(json!({ "title": title, "copies": 3 }))
/// }
///
/// let def = MethodDef::new("bookshop/stock", MethodHandler::Blocking(stock), concat!(file!(), ":", line!()));
/// let server = mcp::Server::builder().method_def(def).build().unwrap();
/// assert_eq!(server.schema()["methods"], json!(["bookshop/stock"]));
///
/// let reserved = MethodDef::new("tools/stock", MethodHandler::Blocking(stock), "here");
/// assert!(mcp::Server::builder().method_def(reserved).build().is_err()); // MCP's namespace
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct MethodDef {
    /// The JSON-RPC method name, such as `bookshop/stock`.
    pub name: &'static str,
    /// Runs the method.
    pub handler: MethodHandler,
    /// Where it was defined (`file:line`).
    pub location: Name,
    /// What its injected parameters need from the server.
    pub injected: Injected,
    /// The OAuth scopes a caller's access token must grant to use it, when the server verifies tokens
    /// ([`Authorization`](crate::auth::Authorization)); none beyond a valid token unless set.
    pub scopes: &'static [&'static str],
    /// The string parameter a 2026-07-28 HTTP request of this method carries in its `Mcp-Name` header too, so that a
    /// gateway routes it without reading the body (`taskId` for `tasks/get`); `None`: no `Mcp-Name`.
    pub name_param: Option<&'static str>,
    /// A method whose request stays open until the client ends it (a subscription stream, such as
    /// `events/stream`): see [`MethodDef::long_lived`].
    pub long_lived: bool,
}

impl MethodDef {
    /// A definition.
    pub const fn new(name: &'static str, handler: MethodHandler, location: &'static str) -> MethodDef {
        MethodDef {
            name,
            handler,
            location: Name::new(location),
            injected: &[],
            scopes: &[],
            name_param: None,
            long_lived: false,
        }
    }

    /// Declares a method whose request stays open until the client ends it (closing the HTTP response, or
    /// `notifications/cancelled`), sending notifications meanwhile: a subscription stream, as `events/stream` is.
    /// Such a request is not counted against [`max_in_flight`](crate::ServerBuilder::max_in_flight) and does not pass
    /// through the middleware layers ([`ServerBuilder::layer`](crate::ServerBuilder::layer)), whose timeouts would
    /// cut it and whose concurrency limits it would hold, as `subscriptions/listen` does not.
    pub const fn long_lived(mut self) -> MethodDef {
        self.long_lived = true;
        self
    }

    /// Declares that a 2026-07-28 HTTP request of this method names `param` (a string parameter) in its `Mcp-Name`
    /// header, as `tools/call` names its tool: the server refuses one whose header is missing or differs, as it does
    /// for the core methods.
    pub const fn routed_by(mut self, param: &'static str) -> MethodDef {
        self.name_param = Some(param);
        self
    }

    /// Declares what the injected parameters need.
    pub const fn injects(mut self, injected: Injected) -> MethodDef {
        self.injected = injected;
        self
    }

    /// The OAuth scopes a caller's access token must grant to use it (`scopes = [...]` on its attribute), when the
    /// server verifies tokens; a request without them is answered `403 insufficient_scope`.
    pub const fn scopes(mut self, scopes: &'static [&'static str]) -> MethodDef {
        self.scopes = scopes;
        self
    }
}

/// A method defined by `#[mcp::method]`: `Server::builder().method::<my_method>()`.
pub trait MethodItem {
    /// The method's definition.
    const DEF: &'static MethodDef;
}

/// Namespaces that MCP defines or reserves; a custom method cannot live in them.
const RESERVED: &[&str] = &[
    "initialize",
    "ping",
    "tools/",
    "prompts/",
    "resources/",
    "completion/",
    "logging/",
    "sampling/",
    "elicitation/",
    "roots/",
    "tasks/",
    "notifications/",
    "server/",
    "subscriptions/",
];

/// `Err` with a sentence if `name` would shadow a method of the specification.
pub(crate) fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("a custom method needs a name".into());
    }
    match RESERVED.iter().find(|r| if r.ends_with('/') { name.starts_with(*r) } else { name == **r }) {
        Some(r) if r.ends_with('/') => Err(format!(
            "custom method `{name}` is in the `{r}` namespace, which MCP reserves; pick a prefix of your own"
        )),
        Some(_) => Err(format!("custom method `{name}` would shadow the MCP method of that name")),
        None => Ok(()),
    }
}

/// The values a custom method may return: `mcp::Json<T>` with a `T: Serialize` that serializes to a JSON object, a
/// `serde_json::Value` object, `()` (an empty object), or a `Result` of one of them whose error converts into a
/// JSON-RPC error. MCP results are objects: a value that is not one is answered with -32603 naming the method's
/// mistake rather than put on the wire.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from an MCP custom method",
    note = "return `mcp::Json<T>` with `T: Serialize` (a struct or a map), a `serde_json::Value` object, `()`, or a `Result` of one of them whose error is `mcp::Error`, `String` or `&str`"
)]
pub trait IntoMethodResult {
    /// Converts the value into the JSON-RPC result, or an error.
    fn into_method_result(self) -> Result<Value, Error>;
}

impl<T: Serialize> IntoMethodResult for Json<T> {
    fn into_method_result(self) -> Result<Value, Error> {
        serde_json::to_value(&self.0)
            .map_err(|e| Error::internal(format!("could not serialize the result: {e}")))
            .and_then(Value::into_method_result)
    }
}

impl IntoMethodResult for Value {
    fn into_method_result(self) -> Result<Value, Error> {
        if self.is_object() {
            Ok(self)
        } else {
            Err(Error::internal("the method's result is not a JSON object, as MCP requires of every result"))
        }
    }
}

impl IntoMethodResult for () {
    fn into_method_result(self) -> Result<Value, Error> {
        Ok(Value::Object(Default::default()))
    }
}

impl<T: IntoMethodResult, E: IntoRpcError> IntoMethodResult for Result<T, E> {
    fn into_method_result(self) -> Result<Value, Error> {
        self.map_err(IntoRpcError::into_rpc_error).and_then(T::into_method_result)
    }
}

/// Errors a custom method may return: an [`Error`] keeps its code; a message becomes -32603.
pub trait IntoRpcError {
    /// Converts into the JSON-RPC error.
    fn into_rpc_error(self) -> Error;
}

impl IntoRpcError for Error {
    fn into_rpc_error(self) -> Error {
        self
    }
}

impl IntoRpcError for String {
    fn into_rpc_error(self) -> Error {
        Error::new(ErrorCode::INTERNAL_ERROR, self)
    }
}

impl IntoRpcError for &str {
    fn into_rpc_error(self) -> Error {
        Error::new(ErrorCode::INTERNAL_ERROR, self)
    }
}

impl IntoRpcError for Cancelled {
    fn into_rpc_error(self) -> Error {
        Error::new(ErrorCode::INTERNAL_ERROR, self.to_string())
    }
}

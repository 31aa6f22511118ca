//! Prompts: the static definition a `#[mcp::prompt]` emits, and the conversion of return values into results.

use std::fmt::Display;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::base::name::Name;
use crate::handler::tool::{Arguments, Handler, Injected};
use crate::wire::error::Error;
use crate::wire::protocol::{Content, GetPromptResult, Icon, Prompt, PromptArgument, PromptMessage};

/// How a prompt runs.
pub type PromptHandler = Handler<GetPromptResult>;

/// A completion function: the values that complete what the user typed so far.
pub type Completer = fn(&str) -> Vec<String>;

/// An argument of a prompt, as const data.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct ArgDef {
    /// Its name.
    pub name: &'static str,
    /// Its description.
    pub description: Option<&'static str>,
    /// Whether it must be given (called once per server: its type does not accept a missing value).
    pub required: fn() -> bool,
}

impl ArgDef {
    /// An argument.
    pub const fn new(name: &'static str, description: Option<&'static str>, required: fn() -> bool) -> ArgDef {
        ArgDef { name, description, required }
    }
}

/// Everything known about a prompt at compile time.
///
/// `#[mcp::prompt]` emits one; it can also be written by hand. The handler gets the arguments as strings:
///
/// ```
/// use mcp::{Context, GetPromptResult, PromptMessage};
/// use mcp::handler::{ArgDef, Arguments, PromptDef, PromptHandler};
/// use serde_json::Value;
///
/// fn summarise(_: &Context, args: Arguments) -> Result<GetPromptResult, mcp::Error> {
///     let topic = args.as_map().get("topic").and_then(Value::as_str).unwrap_or("anything");
///     Ok(GetPromptResult::new(vec![PromptMessage::user(format!("Summarise what you know about {topic}."))]))
/// }
///
/// const ARGS: &[ArgDef] = &[ArgDef::new("topic", Some("What to summarise."), || true)];
/// let def = PromptDef::new("summarise", ARGS, PromptHandler::Blocking(summarise), concat!(file!(), ":", line!()))
///     .description("Summarise a topic.");
/// let server = mcp::Server::builder().prompt_def(def).build().unwrap();
/// let prompt = &server.schema()["prompts"][0];
/// assert_eq!(prompt["arguments"][0]["name"], "topic");
/// assert_eq!(prompt["arguments"][0]["required"], true);
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct PromptDef {
    /// Its name on the wire.
    pub name: Name,
    /// Display title.
    pub title: Option<&'static str>,
    /// What it is for.
    pub description: Option<&'static str>,
    /// Its arguments, in order.
    pub arguments: &'static [ArgDef],
    /// Icon URIs.
    pub icons: &'static [&'static str],
    /// Completion functions, by argument name.
    pub completions: &'static [(&'static str, Completer)],
    /// Renders it.
    pub handler: PromptHandler,
    /// Where it was defined (`file:line`).
    pub location: Name,
    /// The OAuth scopes a caller's access token must grant to use it, when the server verifies tokens
    /// ([`Authorization`](crate::auth::Authorization)); none beyond a valid token unless set.
    pub scopes: &'static [&'static str],
    /// Labels (`tags = ["admin"]` on its attribute) that visibility rules read
    /// ([`ServerBuilder::exclude_tags`](crate::ServerBuilder::exclude_tags), [`ServerBuilder::visible`](crate::ServerBuilder::visible)).
    pub tags: &'static [&'static str],
    /// What its injected parameters need from the server.
    pub injected: Injected,
}

impl PromptDef {
    /// A definition with no title, description, icons or completions.
    pub const fn new(
        name: &'static str,
        arguments: &'static [ArgDef],
        handler: PromptHandler,
        location: &'static str,
    ) -> PromptDef {
        PromptDef {
            name: Name::new(name),
            title: None,
            description: None,
            arguments,
            icons: &[],
            completions: &[],
            handler,
            location: Name::new(location),
            scopes: &[],
            tags: &[],
            injected: &[],
        }
    }

    /// The OAuth scopes a caller's access token must grant to use it (`scopes = [...]` on its attribute), when the
    /// server verifies tokens; a request without them is answered `403 insufficient_scope`.
    pub const fn scopes(mut self, scopes: &'static [&'static str]) -> PromptDef {
        self.scopes = scopes;
        self
    }

    /// Labels that visibility rules read (`tags = [...]` on its attribute).
    pub const fn tags(mut self, tags: &'static [&'static str]) -> PromptDef {
        self.tags = tags;
        self
    }

    /// Sets the title.
    pub const fn title(mut self, title: &'static str) -> PromptDef {
        self.title = Some(title);
        self
    }

    /// Sets the description.
    pub const fn description(mut self, description: &'static str) -> PromptDef {
        self.description = Some(description);
        self
    }

    /// Sets the icons.
    pub const fn icons(mut self, icons: &'static [&'static str]) -> PromptDef {
        self.icons = icons;
        self
    }

    /// Sets the completion functions.
    pub const fn completions(mut self, completions: &'static [(&'static str, Completer)]) -> PromptDef {
        self.completions = completions;
        self
    }

    /// Declares what the injected parameters need.
    pub const fn injects(mut self, injected: Injected) -> PromptDef {
        self.injected = injected;
        self
    }

    pub(crate) fn descriptor(&self) -> Prompt {
        Prompt {
            name: self.name.to_string(),
            title: self.title.map(str::to_owned),
            description: self.description.map(str::to_owned),
            arguments: self
                .arguments
                .iter()
                .map(|a| PromptArgument {
                    name: a.name.to_owned(),
                    title: None,
                    description: a.description.map(str::to_owned),
                    required: Some((a.required)()),
                })
                .collect(),
            icons: self.icons.iter().map(|s| Icon::new(*s)).collect(),
        }
    }
}

/// A prompt defined by `#[mcp::prompt]`: `Server::builder().prompt::<my_prompt>()`.
pub trait PromptItem {
    /// The prompt's definition.
    const DEF: &'static PromptDef;
}

/// The values a prompt function may return: a `String` (one user message), a [`PromptMessage`], a
/// `Vec<PromptMessage>`, a [`GetPromptResult`], or a `Result` of one of them whose `Err` (any `Display`) becomes a
/// JSON-RPC error (-32603, or the code of an `mcp::Error`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from an MCP prompt",
    note = "return a `String`, an `mcp::PromptMessage`, a `Vec<mcp::PromptMessage>`, an `mcp::GetPromptResult`, or a `Result` of one of them"
)]
pub trait IntoPromptResult {
    /// Converts the value.
    fn into_prompt_result(self) -> Result<GetPromptResult, Error>;
}

impl IntoPromptResult for String {
    fn into_prompt_result(self) -> Result<GetPromptResult, Error> {
        Ok(GetPromptResult::new(vec![PromptMessage::user(Content::text(self))]))
    }
}

impl IntoPromptResult for &str {
    fn into_prompt_result(self) -> Result<GetPromptResult, Error> {
        self.to_owned().into_prompt_result()
    }
}

impl IntoPromptResult for PromptMessage {
    fn into_prompt_result(self) -> Result<GetPromptResult, Error> {
        Ok(GetPromptResult::new(vec![self]))
    }
}

impl IntoPromptResult for Vec<PromptMessage> {
    fn into_prompt_result(self) -> Result<GetPromptResult, Error> {
        Ok(GetPromptResult::new(self))
    }
}

impl IntoPromptResult for GetPromptResult {
    fn into_prompt_result(self) -> Result<GetPromptResult, Error> {
        Ok(self)
    }
}

impl<T: IntoPromptResult, E: Display + 'static> IntoPromptResult for Result<T, E> {
    fn into_prompt_result(self) -> Result<GetPromptResult, Error> {
        self.map_err(error_of).and_then(T::into_prompt_result)
    }
}

/// An error's JSON-RPC form: an `mcp::Error` keeps its code, anything else is -32603 with its message.
pub(crate) fn error_of<E: Display + 'static>(e: E) -> Error {
    match (&e as &dyn std::any::Any).downcast_ref::<Error>() {
        Some(err) => err.clone(),
        None => Error::internal(e.to_string()),
    }
}

/// Reads a string argument (of a prompt or a resource template) into `T`: as a JSON string first, then, for
/// numbers, booleans and the like, as the JSON the text spells.
pub(crate) fn string_argument<T: DeserializeOwned>(args: &mut Arguments, name: &str) -> Result<T, String> {
    match args.take::<Value>(name) {
        Some(Ok(value)) => {
            let text = match &value {
                Value::String(s) => Some(s.clone()),
                _ => None,
            };
            serde_json::from_value(value).or_else(|e| {
                text.and_then(|t| serde_json::from_str(&t).ok())
                    .ok_or_else(|| format!("invalid argument `{name}`: {e}"))
            })
        }
        Some(Err(e)) => Err(format!("invalid argument `{name}`: {e}")),
        None => serde_json::from_value(Value::Null).map_err(|_| format!("missing required argument `{name}`")),
    }
}

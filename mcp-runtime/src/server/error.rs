//! [`BuildError`]: why a server could not be built, each case naming what to change.

use std::fmt;

/// Why a server could not be built.
///
/// ```
/// use mcp::BuildError;
///
/// let err = mcp::Server::builder().state(1u8).state(2u8).build().unwrap_err();
/// assert_eq!(err, BuildError::DuplicateState { type_name: "u8" });
/// assert!(err.to_string().contains("two state values of type `u8`"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BuildError {
    /// Two tools have the same name.
    DuplicateTool {
        /// The name.
        name: String,
        /// Where the first definition is.
        first: String,
        /// Where the second definition is.
        second: String,
    },
    /// A tool's name breaks MCP's rule for tool names: 1 to 128 characters of `A-Z a-z 0-9 _ - .`.
    BadToolName {
        /// The name.
        name: String,
        /// What breaks the rule (`it has ' '`).
        why: String,
    },
    /// A tool's input schema is not an object schema.
    BadInputSchema {
        /// The tool.
        name: String,
        /// What is wrong with it.
        why: String,
    },
    /// Two custom methods have the same name.
    DuplicateMethod {
        /// The name.
        name: String,
        /// Where the first definition is.
        first: String,
        /// Where the second definition is.
        second: String,
    },
    /// An extension's identifier or one of its methods is not one an extension may have (a method that would
    /// shadow the specification's or another's, two extensions with one identifier).
    BadExtension {
        /// The extension.
        id: String,
        /// What is wrong.
        message: String,
    },
    /// A mount ([`ServerBuilder::compose`](crate::ServerBuilder::compose)) cannot be served as given (two mounts
    /// with one prefix).
    BadMount {
        /// Its prefix.
        prefix: String,
        /// What is wrong.
        message: String,
    },
    /// The authorization is not one the server can enforce (a resource or issuer that is not an https URL, no way
    /// to check tokens).
    BadAuthorization {
        /// What is wrong, and how to fix it.
        message: String,
    },
    /// A custom method's name would shadow a method of the specification.
    ReservedMethod {
        /// Why.
        message: String,
    },
    /// A handler takes `&State<T>` but the server was not given a `T`.
    MissingState {
        /// `tool` or `method`.
        kind: &'static str,
        /// The handler's name.
        handler: String,
        /// The missing type.
        type_name: &'static str,
        /// Where the handler is defined.
        location: String,
    },
    /// Two state values of the same type.
    DuplicateState {
        /// The type.
        type_name: &'static str,
    },
    /// Two prompts have the same name.
    DuplicatePrompt {
        /// The name.
        name: String,
        /// Where the first definition is.
        first: String,
        /// Where the second definition is.
        second: String,
    },
    /// Two resources (or two templates) have the same URI.
    DuplicateResource {
        /// The URI or template.
        uri: String,
        /// Where the first definition is.
        first: String,
        /// Where the second definition is.
        second: String,
    },
    /// A tool's or a resource's `_meta` is not a JSON object.
    BadMeta {
        /// The tool's name, or the resource's URI.
        name: String,
        /// Why.
        why: String,
    },
    /// A resource template is not one this crate can match.
    BadTemplate {
        /// Why.
        message: String,
    },
    /// A tool's `x-mcp-header` annotation breaks the protocol's rules.
    BadHeader {
        /// The tool.
        tool: String,
        /// Why.
        message: String,
    },
    /// The `requestState` sealing key could not be had.
    BadStateKey {
        /// Why.
        message: String,
    },
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::DuplicateTool { name, first, second } => {
                write!(f, "two tools are named `{name}`: one at {first}, one at {second}; rename one with #[mcp::tool(name = \"...\")]")
            }
            BuildError::BadToolName { name, why } => write!(
                f,
                "the tool name `{name}` breaks MCP's rule for tool names ({}): {why}",
                crate::handler::tool::TOOL_NAME_RULE
            ),
            BuildError::BadInputSchema { name, why } => {
                write!(f, "the input schema of tool `{name}` is unusable: {why}")
            }
            BuildError::DuplicateMethod { name, first, second } => {
                write!(f, "two custom methods are named `{name}`: one at {first}, one at {second}")
            }
            BuildError::BadAuthorization { message } => write!(f, "bad authorization: {message}"),
            BuildError::ReservedMethod { message } => f.write_str(message),
            BuildError::BadExtension { message, .. } => f.write_str(message),
            BuildError::BadMount { prefix, message } => write!(f, "mount `{prefix}`: {message}"),
            BuildError::MissingState { kind, handler, type_name, location } => write!(
                f,
                "{kind} `{handler}` (at {location}) takes `&State<{type_name}>`, but the server has no `{type_name}`: \
                 give it one with `Server::builder().state(...)`"
            ),
            BuildError::DuplicatePrompt { name, first, second } => {
                write!(f, "two prompts are named `{name}`: one at {first}, one at {second}")
            }
            BuildError::BadMeta { name, why } => {
                write!(f, "the `_meta` of `{name}` is not a JSON object ({why}): give the text of one, `{{...}}`")
            }
            BuildError::DuplicateResource { uri, first, second } => {
                write!(f, "two resources have the URI `{uri}`: one at {first}, one at {second}")
            }
            BuildError::BadTemplate { message } => f.write_str(message),
            BuildError::BadHeader { tool, message } => write!(f, "tool `{tool}`: {message}"),
            BuildError::BadStateKey { message } => f.write_str(message),
            BuildError::DuplicateState { type_name } => {
                write!(f, "the server was given two state values of type `{type_name}`; wrap one in a type of its own")
            }
        }
    }
}

impl std::error::Error for BuildError {}

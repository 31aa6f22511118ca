//! `#[mcp::method]`: a JSON-RPC method the specification does not define, served by a function.
//!
//! Parsed in [`options`] (the options as written), validated here against the function, expanded in [`expand`].

mod expand;
mod options;

use proc_macro2::TokenStream;

use crate::diagnostics::Errors;
use crate::function::{self, Function, HandlerMacro};
use crate::which::Macro;

use options::Options;

/// Namespaces MCP defines or reserves (the runtime checks the same list when a server is built).
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

fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("a custom method needs a name".into());
    }
    if let Some(r) = RESERVED.iter().find(|r| if r.ends_with('/') { name.starts_with(*r) } else { name == **r }) {
        return Err(if r.ends_with('/') {
            format!("custom method `{name}` is in the `{r}` namespace, which MCP reserves; pick a prefix of your own")
        } else {
            format!("custom method `{name}` would shadow the MCP method of that name")
        });
    }
    Ok(())
}

pub(crate) fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    function::expand::<MethodMacro>(attr, item)
}

/// A validated custom method's configuration.
pub(crate) struct Method {
    pub(crate) options: Options,
    /// The method's name: the `name` option or the function's.
    pub(crate) name: String,
}

struct MethodMacro;

impl HandlerMacro for MethodMacro {
    const MACRO: Macro = Macro::Method;
    type Options = Options;
    type Config = Method;

    fn validate(options: Options, item: &Function, errors: &mut Errors) -> Option<Method> {
        if let Some(scopes) = &options.scopes {
            scopes.check(errors);
        }
        let name = match &options.name {
            Some(lit) => {
                if let Err(e) = check_name(&lit.value()) {
                    errors.push_spanned(lit, e);
                }
                lit.value()
            }
            None => item.name.clone(),
        };
        Some(Method { options, name })
    }

    fn expand(method: &Method, item: &Function) -> TokenStream {
        expand::emit(method, item)
    }
}

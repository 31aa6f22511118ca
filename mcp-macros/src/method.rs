//! `#[mcp::method]`: a JSON-RPC method the specification does not define, served by a function.

use proc_macro2::TokenStream;
use quote::quote;
use syn::parse::{Parse, ParseStream};
use syn::LitStr;

use crate::attr::{self, set, string_value, Scopes};
use crate::diagnostics::Errors;
use crate::function::{self, Function, HandlerMacro, Macro};
use crate::handler::{self, Glue, Kind};
use crate::paths;

mod kw {
    syn::custom_keyword!(name);
}

/// The options of `#[mcp::method(...)]` as written.
#[derive(Default)]
struct Options {
    name: Option<LitStr>,
    scopes: Option<Scopes>,
    krate: Option<syn::Path>,
}

impl Parse for Options {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut o = Options::default();
        o.krate = attr::parse_options(input, |input, lookahead, span| {
            if lookahead.peek(kw::name) {
                input.parse::<kw::name>()?;
                set(&mut o.name, string_value(input)?, span, "name")?;
                Ok(true)
            } else {
                Scopes::parse_key(input, lookahead, span, &mut o.scopes)
            }
        })?;
        Ok(o)
    }
}

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
struct Method {
    options: Options,
    /// The method's name: the `name` option or the function's.
    name: String,
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
        let mcp = paths::runtime(method.options.krate.as_ref());
        let name = &method.name;
        let Glue { call_fn, handler, injects } = handler::glue(&Kind::Method, &mcp, &item.function, &item.params);
        let scopes = Scopes::builder(&method.options.scopes);
        let def = quote! {
            #mcp::MethodDef::new(#name, #handler, ::core::concat!(::core::file!(), ":", ::core::line!()))
            #injects
            #scopes
        };
        paths::item(&mcp, &item.function, "Method", call_fn, def)
    }
}

//! `#[mcp::method]`: a JSON-RPC method the specification does not define, served by a function.

use proc_macro2::TokenStream;
use quote::quote;
use syn::parse::{Parse, ParseStream};
use syn::{ItemFn, LitStr, Token};

use crate::attr::Scopes;
use crate::diagnostics::{self, Errors};
use crate::handler::{self, Glue, Kind};
use crate::{params, paths};

mod kw {
    syn::custom_keyword!(name);
}

#[derive(Default)]
struct Options {
    name: Option<LitStr>,
    scopes: Option<Scopes>,
    krate: Option<syn::Path>,
}

impl Parse for Options {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut o = Options::default();
        while !input.is_empty() {
            let lookahead = input.lookahead1();
            let span = input.span();
            if lookahead.peek(kw::name) {
                input.parse::<kw::name>()?;
                input.parse::<Token![=]>()?;
                let value: LitStr = input.parse()?;
                if o.name.replace(value).is_some() {
                    return Err(syn::Error::new(span, "duplicate option `name`"));
                }
            } else if Scopes::parse_key(input, &lookahead, span, &mut o.scopes)? {
            } else if lookahead.peek(Token![crate]) {
                input.parse::<Token![crate]>()?;
                input.parse::<Token![=]>()?;
                let value: LitStr = input.parse()?;
                if o.krate.replace(value.parse()?).is_some() {
                    return Err(syn::Error::new(span, "duplicate option `crate`"));
                }
            } else {
                return Err(lookahead.error());
            }
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
        }
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
    let mut function: ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(e) => return diagnostics::with_item(item, e),
    };
    let mut errors = Errors::default();
    let options: Options = match syn::parse2(attr) {
        Ok(o) => o,
        Err(e) => {
            errors.push(e);
            Options::default()
        }
    };
    let sig = &function.sig;
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        errors.push_spanned(&sig.generics, "custom methods cannot be generic");
    }
    let name = match &options.name {
        Some(lit) => {
            if let Err(e) = check_name(&lit.value()) {
                errors.push_spanned(lit, e);
            }
            lit.value()
        }
        None => sig.ident.to_string().trim_start_matches("r#").to_owned(),
    };
    let params = params::classify(&mut function.sig, "method", &mut errors);
    if let Err(e) = errors.finish() {
        return diagnostics::with_item(quote!(#function), e);
    }
    let mcp = paths::runtime(options.krate.as_ref());
    let ident = &function.sig.ident;
    let Glue { call_fn, handler, injects } = handler::glue(&Kind::Method, &mcp, &function, &params);
    let scopes = Scopes::builder(&options.scopes);
    let def = quote! {
        #mcp::MethodDef::new(#name, #handler, ::core::concat!(::core::file!(), ":", ::core::line!()))
        #injects
        #scopes
    };
    let tokens = paths::item(&mcp, &function, "Method", call_fn, def);
    diagnostics::debug_print(&ident.to_string(), &tokens);
    tokens
}

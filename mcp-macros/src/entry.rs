//! `#[mcp::main]`: a thin sync `main` that hands the user's async body to the runtime.

use crate::item_fn::ItemFn;
use proc_macro2::TokenStream;
use quote::quote;

use crate::diagnostics::{self, Errors};
use crate::{attr, paths};

mod kw {
    syn::custom_keyword!(tracing);
}

struct Options {
    krate: Option<syn::Path>,
    /// `tracing = false`: no stderr subscriber from the framework (the program installs its own).
    tracing: Option<syn::LitBool>,
}

impl syn::parse::Parse for Options {
    fn parse(input: syn::parse::ParseStream) -> syn::Result<Self> {
        let mut tracing = None;
        let krate = attr::parse_options(input, |input, lookahead, span| {
            if !lookahead.peek(kw::tracing) {
                return Ok(false);
            }
            input.parse::<kw::tracing>()?;
            input.parse::<syn::Token![=]>()?;
            attr::set(&mut tracing, input.parse()?, span, "tracing")?;
            Ok(true)
        })?;
        Ok(Options { krate, tracing })
    }
}

pub(crate) fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    let function: ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(e) => return diagnostics::with_item(item, e),
    };
    let options: Options = match syn::parse2(attr) {
        Ok(o) => o,
        Err(e) => return diagnostics::with_item(item, e),
    };
    let mut errors = Errors::default();
    if function.sig.asyncness.is_none() {
        errors.push_spanned(function.sig.fn_token, "#[mcp::main] goes on `async fn main()`");
    }
    if function.sig.inputs.len() > 1 {
        errors.push_spanned(
            &function.sig.inputs,
            "`main` takes no parameters, or one: `args: mcp::Args`, or options of yours implementing `mcp::FromArgs`",
        );
    }
    if !function.sig.generics.params.is_empty() {
        errors.push_spanned(&function.sig.generics, "`main` cannot be generic");
    }
    if let Err(e) = errors.finish() {
        return diagnostics::with_item(item, e);
    }
    let mcp = paths::runtime(options.krate.as_ref());
    let takes_args = !function.sig.inputs.is_empty();
    let subscriber = options.tracing.as_ref().is_none_or(|t| t.value);
    let ItemFn { attrs, vis, mut sig, block } = function;
    let ident = sig.ident.clone();
    sig.ident = syn::Ident::new("__mcp_main", sig.ident.span());
    let body = if takes_args { quote!(__mcp_main) } else { quote!(|_: #mcp::Args| __mcp_main()) };
    quote! {
        #(#attrs)*
        #vis fn #ident() -> ::std::process::ExitCode {
            #sig #block
            #mcp::__private::run_main(
                match ::core::option_env!("CARGO_BIN_NAME") {
                    ::core::option::Option::Some(name) => name,
                    ::core::option::Option::None => ::core::env!("CARGO_PKG_NAME"),
                },
                ::core::env!("CARGO_PKG_VERSION"),
                #mcp::__private::MainOptions { subscriber: #subscriber },
                #body,
            )
        }
    }
}

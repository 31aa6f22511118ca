//! `#[mcp::prompt]`: a function whose parameters are the prompt's arguments and whose return value its messages.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::parse::{Parse, ParseStream};
use syn::spanned::Spanned;
use syn::{Ident, ItemFn, LitStr};

use crate::attr::{self, set, Common};
use crate::diagnostics::{self, Errors};
use crate::handler::{self, Glue, Kind};
use crate::params::{self, Param};
use crate::{docs, paths};

mod kw {
    syn::custom_keyword!(complete);
}

/// The options of `#[mcp::prompt(...)]`: the shared ones and `complete(...)`.
#[derive(Default)]
struct Options {
    common: Common,
    completions: Option<Vec<(Ident, syn::Path)>>,
}

impl Parse for Options {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut completions = None;
        let common = Common::parse_with(input, |input, lookahead, span| {
            if !lookahead.peek(kw::complete) {
                return Ok(false);
            }
            input.parse::<kw::complete>()?;
            set(&mut completions, attr::completions(input)?, span, "complete")?;
            Ok(true)
        })?;
        Ok(Options { common, completions })
    }
}

pub(crate) fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut function: ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(e) => return diagnostics::with_item(item, e),
    };
    let mut errors = Errors::default();
    let options: Options = syn::parse2(attr).unwrap_or_else(|e| {
        errors.push(e);
        Options::default()
    });
    if !function.sig.generics.params.is_empty() {
        errors.push_spanned(&function.sig.generics, "prompt functions cannot be generic");
    }
    let params = params::classify(&mut function.sig, "prompt", &mut errors);
    for (arg, _) in options.completions.iter().flatten() {
        if !params.iter().any(|p| matches!(p, Param::Argument { name, .. } if arg == name.as_str())) {
            errors.push_spanned(arg, format!("the prompt has no argument `{arg}` to complete"));
        }
    }
    if let Err(e) = errors.finish() {
        return diagnostics::with_item(quote!(#function), e);
    }
    let mcp = paths::runtime(options.common.krate.as_ref());
    let private = quote!(#mcp::__private);
    let ident = &function.sig.ident;
    let name = options.common.name.as_ref().map(LitStr::value).unwrap_or_else(|| ident.to_string());
    let arguments = params.iter().filter_map(|p| match p {
        Param::Argument { name, ty, doc, .. } => {
            let doc = match doc {
                Some(d) => quote!(::core::option::Option::Some(#d)),
                None => quote!(::core::option::Option::None),
            };
            let reader = params::reader(&private, ty, true);
            Some(quote_spanned!(ty.span()=> #mcp::ArgDef::new(#name, #doc, || (#reader.required)())))
        }
        Param::Injected { .. } | Param::Flattened { .. } => None,
    });
    let Glue { call_fn, handler, injects } = handler::glue(&Kind::Prompt, &mcp, &function, &params);
    let mut builder = quote!(#injects);
    builder.extend(options.common.builder(docs::collect(&function.attrs)));
    if let Some(c) = &options.completions {
        let c = attr::completions_tokens(&mcp, c);
        builder.extend(quote!(.completions(#c)));
    }
    let def = quote! {
        #mcp::PromptDef::new(
            #name,
            &[#(#arguments),*],
            #handler,
            ::core::concat!(::core::file!(), ":", ::core::line!()),
        )
        #builder
    };
    let tokens = paths::item(&mcp, &function, "Prompt", call_fn, def);
    diagnostics::debug_print(&ident.to_string(), &tokens);
    tokens
}

//! `#[mcp::prompt]`: a function whose parameters are the prompt's arguments and whose return value its messages.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::parse::{Parse, ParseStream};
use syn::spanned::Spanned;
use syn::{Ident, LitStr};

use crate::attr::{self, set, Common};
use crate::diagnostics::Errors;
use crate::function::{self, Function, HandlerMacro, Macro};
use crate::handler::{self, Glue, Kind};
use crate::params::{self, Param};
use crate::paths;

mod kw {
    syn::custom_keyword!(complete);
}

/// The options of `#[mcp::prompt(...)]` as written: the shared ones and `complete(...)`.
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
    function::expand::<PromptMacro>(attr, item)
}

/// A validated prompt's configuration.
struct Prompt {
    options: Options,
    /// The prompt's name: the `name` option or the function's.
    name: String,
}

struct PromptMacro;

impl HandlerMacro for PromptMacro {
    const MACRO: Macro = Macro::Prompt;
    type Options = Options;
    type Config = Prompt;

    fn validate(options: Options, item: &Function, errors: &mut Errors) -> Option<Prompt> {
        options.common.check(errors);
        let arguments: Vec<&str> = item
            .params
            .iter()
            .filter_map(|p| match p {
                Param::Argument { name, .. } => Some(name.as_str()),
                Param::Injected { .. } | Param::Flattened { .. } => None,
            })
            .collect();
        if let Some(completions) = &options.completions {
            attr::check_completions(completions, &arguments, "the prompt has no argument", errors);
        }
        let name = options.common.name.as_ref().map_or_else(|| item.name.clone(), LitStr::value);
        Some(Prompt { options, name })
    }

    fn expand(prompt: &Prompt, item: &Function) -> TokenStream {
        let options = &prompt.options;
        let name = &prompt.name;
        let mcp = paths::runtime(options.common.krate.as_ref());
        let private = quote!(#mcp::__private);
        let arguments = item.params.iter().filter_map(|p| match p {
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
        let Glue { call_fn, handler, injects } = handler::glue(&Kind::Prompt, &mcp, &item.function, &item.params);
        let mut builder = quote!(#injects);
        builder.extend(options.common.builder(item.doc.clone()));
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
        paths::item(&mcp, &item.function, "Prompt", call_fn, def)
    }
}

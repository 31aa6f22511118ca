//! `#[mcp::prompt]` expanded: the definition and glue, from the validated configuration.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use crate::attr;
use crate::function::Function;
use crate::handler::{self, Glue};
use crate::params::{self, Param};
use crate::paths;
use crate::which::Macro;

use super::Prompt;

pub(super) fn emit(prompt: &Prompt, item: &Function) -> TokenStream {
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
            Some(quote_spanned!(ty.span()=> #mcp::handler::ArgDef::new(#name, #doc, || (#reader.required)())))
        }
        Param::Injected { .. } | Param::Flattened { .. } => None,
    });
    let Glue { call_fn, handler, injects } =
        handler::glue(Macro::Prompt, &quote!(), &mcp, &item.function, &item.params);
    let mut builder = quote!(#injects);
    builder.extend(options.common.builder(item.doc.clone()));
    if let Some(c) = &options.completions {
        let c = attr::completions_tokens(&mcp, c);
        builder.extend(quote!(.completions(#c)));
    }
    let def = quote! {
        #mcp::handler::PromptDef::new(
            #name,
            &[#(#arguments),*],
            #handler,
            ::core::concat!(::core::file!(), ":", ::core::line!()),
        )
        #builder
    };
    paths::item(&mcp, &item.function, "Prompt", call_fn, def)
}

//! `#[mcp::resource]` expanded: the definition and glue, from the validated configuration.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};

use crate::attr;
use crate::function::Function;
use crate::handler::{self, Glue};
use crate::paths;
use crate::which::Macro;

use super::{CacheScope, Resource, Role};

pub(super) fn emit(resource: &Resource, item: &Function) -> TokenStream {
    let Resource { options, uri, template, name, audience, cache_scope } = resource;
    let mcp = paths::runtime(options.common.krate.as_ref());
    let mime = match &options.mime_type {
        Some(m) => quote!(::core::option::Option::Some(#m)),
        None => quote!(::core::option::Option::None),
    };
    let Glue { call_fn, handler, injects } = handler::glue(Macro::Resource, &mime, &mcp, &item.function, &item.params);
    let constructor = if *template { quote!(template) } else { quote!(fixed) };
    let mut builder = quote!(#injects);
    builder.extend(options.common.builder(item.doc.clone()));
    if let Some(m) = &options.mime_type {
        builder.extend(quote!(.mime_type(#m)));
    }
    if let Some(s) = &options.size {
        builder.extend(quote!(.size(#s)));
    }
    if !audience.is_empty() {
        let roles = audience.iter().map(|role| match role {
            Role::User => quote!(#mcp::Role::User),
            Role::Assistant => quote!(#mcp::Role::Assistant),
        });
        builder.extend(quote!(.audience(&[#(#roles),*])));
    }
    if let Some(p) = &options.priority {
        builder.extend(quote!(.priority(#p)));
    }
    if let Some(c) = &options.completions {
        let c = attr::completions_tokens(&mcp, c);
        builder.extend(quote!(.completions(#c)));
    }
    if let Some(list) = &options.list {
        let list = quote_spanned!(syn::spanned::Spanned::span(list)=> #mcp::__private::lister(#list));
        builder.extend(quote!(.list(#list)));
    }
    if options.ttl_ms.is_some() || cache_scope.is_some() {
        let ttl = options.ttl_ms.as_ref().map(|t| quote!(#t)).unwrap_or(quote!(0));
        let scope = match cache_scope {
            Some(CacheScope::Public) => quote!(Public),
            Some(CacheScope::Private) | None => quote!(Private),
        };
        builder.extend(quote!(.cache(#ttl, #mcp::CacheScope::#scope)));
    }
    let def = quote! {
        #mcp::handler::ResourceDef::#constructor(
            #uri,
            #name,
            #handler,
            ::core::concat!(::core::file!(), ":", ::core::line!()),
        )
        #builder
    };
    paths::item(&mcp, &item.function, "Resource", call_fn, def)
}

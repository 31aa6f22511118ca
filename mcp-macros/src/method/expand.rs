//! `#[mcp::method]` expanded: the definition and glue, from the validated configuration.

use proc_macro2::TokenStream;
use quote::quote;

use crate::attr::Scopes;
use crate::function::Function;
use crate::handler::{self, Glue};
use crate::paths;
use crate::which::Macro;

use super::Method;

pub(super) fn emit(method: &Method, item: &Function) -> TokenStream {
    let mcp = paths::runtime(method.options.krate.as_ref());
    let name = &method.name;
    let Glue { call_fn, handler, injects } =
        handler::glue(Macro::Method, &quote!(), &mcp, &item.function, &item.params);
    let scopes = Scopes::builder(&method.options.scopes);
    let def = quote! {
        #mcp::handler::MethodDef::new(#name, #handler, ::core::concat!(::core::file!(), ":", ::core::line!()))
        #injects
        #scopes
    };
    paths::item(&mcp, &item.function, "Method", call_fn, def)
}

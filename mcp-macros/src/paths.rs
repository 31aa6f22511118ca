//! The one place that spells the runtime's path. A `crate = "..."` option points it elsewhere.

use proc_macro2::TokenStream;
use quote::quote;

/// `::mcp`, or the path the user gave with `crate = "..."`.
pub(crate) fn runtime(krate: Option<&syn::Path>) -> TokenStream {
    match krate {
        Some(path) => quote!(#path),
        None => quote!(::mcp),
    }
}

/// The fixed `#[allow]` list on generated items.
pub(crate) fn allows() -> TokenStream {
    quote!(#[allow(non_camel_case_types, non_snake_case, dead_code, unused_mut, unused_variables, clippy::all)])
}

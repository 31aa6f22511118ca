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

/// The user's function, and beside it the hidden item of the same name its glue is implemented on (a braced struct
/// lives only in the type namespace, so it does not clash with the function).
pub(crate) fn beside(function: &crate::item_fn::ItemFn) -> TokenStream {
    let allows = allows();
    let (vis, ident) = (&function.vis, &function.sig.ident);
    quote! {
        #function

        #[doc(hidden)]
        #allows
        #vis struct #ident {}
    }
}

/// The glue every attribute emits beside the user's function: a hidden item of the same name (a braced struct
/// lives only in the type namespace, so it does not clash with the function), its `<Kind>Item` impl whose `DEF` is
/// `def` (evaluated in a block that may hold helper functions), and the `inventory` registration.
pub(crate) fn item(
    mcp: &TokenStream,
    function: &crate::item_fn::ItemFn,
    kind: &str,
    body: TokenStream,
    def: TokenStream,
) -> TokenStream {
    let allows = allows();
    let ident = &function.sig.ident;
    let item_trait = quote::format_ident!("{kind}Item");
    let def_type = quote::format_ident!("{kind}Def");
    let registration = quote::format_ident!("{kind}Registration");
    let marker = beside(function);
    quote! {
        #marker

        #[automatically_derived]
        #allows
        impl #mcp::handler::#item_trait for #ident {
            const DEF: &'static #mcp::handler::#def_type = &{
                #body
                #def
            };
        }

        #mcp::__private::inventory::submit! {
            #mcp::__private::#registration(<#ident as #mcp::handler::#item_trait>::DEF)
        }
    }
}

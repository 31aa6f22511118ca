//! The glue that reads (and describes) one argument.

use proc_macro2::{Ident, TokenStream};
use syn::spanned::Spanned;
use syn::Type;

/// The glue that reads (and, for JSON, describes) an argument of type `ty`: `arg::<T>()` for a JSON argument,
/// `string_arg::<T>()` for a string one. A type spelled like an injected one (last segment `State` or `Context`)
/// taken by value goes through `Probe`, which resolves to the ordinary glue for any argument type and to an error
/// saying to take a reference for the runtime's own `State<T>` and `Context`: the type system decides, not the
/// spelling.
pub(crate) fn reader(private: &TokenStream, ty: &Type, strings: bool) -> TokenStream {
    let injected_name = match ty {
        Type::Path(p) if p.qself.is_none() => {
            p.path.segments.last().map(|last| &last.ident).filter(|name| *name == "State" || *name == "Context")
        }
        _ => None,
    };
    if let Some(name) = injected_name {
        // At the type's name, so the error at the method call points at the user's parameter.
        let glue = Ident::new(if strings { "string_arg" } else { "arg" }, name.span());
        quote::quote_spanned! {ty.span()=> {
            #[allow(unused_imports)]
            use #private::{ArgProbe as _, InjectedProbe as _};
            (&#private::Probe::<#ty>::NEW).#glue()
        }}
    } else {
        let glue = Ident::new(if strings { "string_arg" } else { "arg" }, ty.span());
        quote::quote_spanned!(ty.span()=> #private::#glue::<#ty>())
    }
}

//! `#[mcp::event]` expanded: the event type built from the validated configuration, its glue (the arguments'
//! schema and reader, the match rule or the check), and its registration.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use super::{Event, Kind};
use crate::function::Function;
use crate::handler;
use crate::params::{self, Param};
use crate::paths;

pub(super) fn emit(event: &Event, item: &Function) -> TokenStream {
    let mcp = paths::runtime(event.options.krate.as_ref());
    let private = quote!(#mcp::__private);
    let function = &item.function;
    let ident = &function.sig.ident;
    let name = &event.name;
    let arguments = &item.params[..event.arguments];
    let properties = handler::properties(&private, arguments);
    let (reads, vars, types) = reads(&private, arguments);
    let description = match (&event.options.description, &item.doc) {
        (Some(text), _) => quote!(.description(#text)),
        (None, Some(doc)) => quote!(.description(#doc)),
        (None, None) => quote!(),
    };
    let delivery = event.options.delivery.as_ref().map(|modes| {
        let modes = modes.iter().map(|m| {
            let variant = format_ident!("{}", capitalized(&m.to_string()), span = m.span());
            quote!(#mcp::events::Delivery::#variant)
        });
        quote!(.delivery(&[#(#modes),*]))
    });
    let (payload_ty, source) = match &event.kind {
        Kind::Emitted { payload } => (quote!(#payload), emitted(&mcp, ident, name, payload, &vars)),
        Kind::Checked => {
            let payload = event.options.payload.as_ref().map_or(quote!(#private::serde_json::Value), |p| quote!(#p));
            (payload, checked(&mcp, ident, name, &vars))
        }
    };
    let payload_schema = match (&event.kind, &event.options.payload) {
        (Kind::Checked, None) => quote!(),
        _ => quote!(.payload::<#payload_ty>()),
    };
    let allows = paths::allows();
    let marker = paths::beside(function);
    quote! {
        #marker

        #[automatically_derived]
        #allows
        impl #mcp::events::EventItem for #ident {
            const NAME: &'static str = #name;
            type Payload = #payload_ty;

            fn event_type() -> #mcp::events::EventType {
                fn __mcp_input_schema() -> ::core::result::Result<#private::serde_json::Value, #mcp::handler::SchemaError> {
                    let mut __mcp_schema = #mcp::handler::ObjectSchema::new();
                    #(#properties)*
                    __mcp_schema.finish()
                }
                fn __mcp_read(
                    __mcp_arguments: &#private::serde_json::Value,
                ) -> ::core::result::Result<(#(#types,)*), ::std::string::String> {
                    let mut __mcp_args = #private::event_arguments(__mcp_arguments)?;
                    #(#reads)*
                    #private::no_other_arguments(&__mcp_args)?;
                    ::core::result::Result::Ok((#(#vars,)*))
                }
                fn __mcp_check_arguments(
                    __mcp_arguments: &#private::serde_json::Value,
                ) -> ::core::result::Result<(), ::std::string::String> {
                    __mcp_read(__mcp_arguments).map(|_| ())
                }
                #source
                    #description
                    .__macro_arguments(__mcp_input_schema, __mcp_check_arguments)
                    #payload_schema
                    #delivery
            }
        }

        #private::inventory::submit! {
            #private::EventRegistration(<#ident as #mcp::events::EventItem>::event_type)
        }
    }
}

/// The statements that read each argument out of `__mcp_args`, the variables they bind, and their types.
fn reads(private: &TokenStream, arguments: &[Param]) -> (Vec<TokenStream>, Vec<syn::Ident>, Vec<TokenStream>) {
    let named: Vec<&str> = arguments
        .iter()
        .filter_map(|p| match p {
            Param::Argument { name, .. } => Some(name.as_str()),
            _ => None,
        })
        .collect();
    let (mut reads, mut vars, mut types) = (Vec::new(), Vec::new(), Vec::new());
    for (i, p) in arguments.iter().enumerate() {
        let var = format_ident!("__mcp_p{}", i);
        match p {
            Param::Argument { name, ty, .. } => {
                let reader = params::reader(private, ty, false);
                reads.push(quote_spanned!(ty.span()=> let #var: #ty = (#reader.read)(&mut __mcp_args, #name)?;));
                types.push(quote!(#ty));
            }
            Param::Flattened { ty, .. } => {
                reads.push(quote_spanned! {ty.span()=>
                    let #var: #ty = (#private::flattened::<#ty>().read)(&__mcp_args, &[#(#named),*])?;
                });
                types.push(quote!(#ty));
            }
            Param::Injected { .. } => continue,
        }
        vars.push(var);
    }
    // Flattened structs read the whole object before the named arguments are taken out of it.
    reads.sort_by_key(|r| !r.to_string().contains("flattened"));
    (reads, vars, types)
}

/// `EventType::emitted(..).__macro_matching(..)`: the match rule reads the arguments and the payload, then calls
/// the function; what does not read matches nothing.
fn emitted(mcp: &TokenStream, ident: &syn::Ident, name: &str, payload: &syn::Type, vars: &[syn::Ident]) -> TokenStream {
    let private = quote!(#mcp::__private);
    quote! {
        fn __mcp_match(
            __mcp_arguments: &#private::serde_json::Value,
            __mcp_data: &#private::serde_json::Value,
        ) -> bool {
            let ::core::result::Result::Ok((#(#vars,)*)) = __mcp_read(__mcp_arguments) else { return false };
            let ::core::result::Result::Ok(__mcp_payload) =
                <#payload as #private::serde::Deserialize>::deserialize(__mcp_data)
            else {
                return false;
            };
            #ident(#(#vars,)* &__mcp_payload)
        }
        #mcp::events::EventType::emitted(#name).__macro_matching(__mcp_match)
    }
}

/// `EventType::checked(..)`: the check reads the arguments (-32602 when they do not read), then awaits the
/// function with the `Check`.
fn checked(mcp: &TokenStream, ident: &syn::Ident, name: &str, vars: &[syn::Ident]) -> TokenStream {
    quote! {
        fn __mcp_check(
            __mcp_check: #mcp::events::Check,
        ) -> #mcp::handler::BoxFuture<'static, ::core::result::Result<#mcp::events::Checked, #mcp::Error>> {
            ::std::boxed::Box::pin(async move {
                let (#(#vars,)*) = __mcp_read(&__mcp_check.arguments).map_err(#mcp::Error::invalid_params)?;
                #ident(#(#vars,)* __mcp_check).await
            })
        }
        #mcp::events::EventType::checked(#name, __mcp_check)
    }
}

fn capitalized(word: &str) -> String {
    let mut chars = word.chars();
    chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default()
}

//! `#[mcp::tool]` expanded: the tool's definition and glue, from its validated configuration.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use super::{TaskSupport, Tool};
use crate::function::Function;
use crate::handler::{self, Glue};
use crate::params::Param;
use crate::paths;
use crate::which::Macro;

pub(super) fn emit(tool: &Tool, item: &Function) -> TokenStream {
    let mcp = paths::runtime(tool.options.common.krate.as_ref());
    let private = quote!(#mcp::__private);
    let function = &item.function;
    let name = &tool.name;
    let ret_ty = match &function.sig.output {
        syn::ReturnType::Default => quote!(()),
        syn::ReturnType::Type(_, ty) => quote!(#ty),
    };
    let ret_span = match &function.sig.output {
        syn::ReturnType::Default => function.sig.ident.span(),
        syn::ReturnType::Type(_, ty) => ty.span(),
    };

    let properties = handler::properties(&private, &item.params);
    let output_schema = quote_spanned!(ret_span=> #private::returns::<#ret_ty>().output_schema);
    let Glue { call_fn, handler, injects } = handler::glue(Macro::Tool, &quote!(), &mcp, function, &item.params);

    let builder = builder(tool, item, &mcp);
    let body = quote! {
        fn __mcp_input_schema() -> ::core::result::Result<#private::serde_json::Value, #mcp::handler::SchemaError> {
            let mut __mcp_schema = #mcp::handler::ObjectSchema::new();
            #(#properties)*
            __mcp_schema.finish()
        }
        #call_fn
    };
    let def = quote! {
        #mcp::handler::ToolDef::built(
            #name,
            #mcp::handler::InputSchema::Built(__mcp_input_schema),
            #output_schema,
            #handler,
            ::core::concat!(::core::file!(), ":", ::core::line!()),
        )
        #builder
        #injects
    };
    paths::item(&mcp, function, "Tool", body, def)
}

/// The calls on the definition that its options ask for: the shared ones, the hints, the task settings, and
/// `.cannot_ask()` for a function with no injected parameter.
fn builder(tool: &Tool, item: &Function, mcp: &TokenStream) -> TokenStream {
    let mut builder = tool.options.common.builder(item.doc.clone());
    let hints: Vec<_> = [
        ("read_only", &tool.options.read_only),
        ("destructive", &tool.options.destructive),
        ("idempotent", &tool.options.idempotent),
        ("open_world", &tool.options.open_world),
    ]
    .into_iter()
    .filter_map(|(m, v)| v.as_ref().map(|v| (format_ident!("{}", m), v)))
    .map(|(m, v)| quote!(.#m(#v)))
    .collect();
    if !hints.is_empty() {
        builder.extend(quote!(.hints(#mcp::handler::Hints::NONE #(#hints)*)));
    }
    if let Some(task) = tool.task {
        let support = match task {
            TaskSupport::Optional => quote!(Optional),
            TaskSupport::Required => quote!(Required),
            TaskSupport::Forbidden => quote!(Forbidden),
        };
        let mut options = quote!(#mcp::TaskOptions::new(#mcp::TaskSupport::#support));
        if let Some(deferred) = &tool.options.defer_task {
            options.extend(quote!(.deferred(#deferred)));
        }
        if let Some(ttl) = &tool.options.task_ttl_ms {
            options.extend(quote!(.ttl_ms(#ttl)));
        }
        if let Some(poll) = &tool.options.task_poll_ms {
            options.extend(quote!(.poll_interval_ms(#poll)));
        }
        builder.extend(quote!(.task(#options)));
    }

    // With no injected parameter the function cannot reach the request's `Context`, so it cannot ask the client.
    if !item.params.iter().any(|p| matches!(p, Param::Injected { .. })) {
        builder.extend(quote!(.cannot_ask()));
    }

    builder
}

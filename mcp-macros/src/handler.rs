//! The glue shared by tools and custom methods: read each argument, inject each reference, call the function,
//! convert what it returns.

use crate::item_fn::ItemFn;
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use crate::params::{self, Param};
use crate::which::Macro;

/// The generated pieces of one handler.
pub(crate) struct Glue {
    /// `fn __mcp_call(...)`.
    pub call_fn: TokenStream,
    /// `ToolHandler::Async(__mcp_call)` or the like.
    pub handler: TokenStream,
    /// `.injects(&[...])`, or nothing.
    pub injects: TokenStream,
}

/// The glue of a handler of macro `which`; `mime` is a resource's MIME type (`Some("text/plain")` or `None`, as
/// tokens), which its contents carry.
pub(crate) fn glue(which: Macro, mime: &TokenStream, mcp: &TokenStream, function: &ItemFn, params: &[Param]) -> Glue {
    let shape = Shape::of(which, mime, mcp, function);
    // Tools and methods take JSON arguments; prompts and templates take strings.
    let strings = matches!(which, Macro::Prompt | Macro::Resource);
    let Reads { reads, call_args, injected } = reads(mcp, &shape.invalid, params, strings);
    let (call_fn, handler) = call_fn(mcp, function, &shape, &reads, &call_args);
    let injects = if injected.is_empty() { quote!() } else { quote!(.injects(&[#(#injected),*])) };
    Glue { call_fn, handler, injects }
}

/// What differs between the four kinds of handler: how a bad argument is answered, how the return value is
/// converted, what the glue returns and which handler type holds it.
struct Shape {
    invalid: TokenStream,
    convert: TokenStream,
    result_ty: TokenStream,
    handler_ty: TokenStream,
}

impl Shape {
    fn of(which: Macro, mime: &TokenStream, mcp: &TokenStream, function: &ItemFn) -> Shape {
        let private = quote!(#mcp::__private);
        let (ret_ty, ret_span) = match &function.sig.output {
            syn::ReturnType::Default => (quote!(()), function.sig.ident.span()),
            syn::ReturnType::Type(_, ty) => (quote!(#ty), ty.span()),
        };
        let (invalid, convert, result_ty, handler_ty) = match which {
            Macro::Tool => (
                quote!(#private::invalid_tool_argument),
                quote_spanned!(ret_span=> (#private::returns::<#ret_ty>().convert)),
                quote!(#private::HandlerResult),
                quote!(#mcp::handler::ToolHandler),
            ),
            Macro::Method | Macro::Event => (
                quote!(#private::invalid_method_argument),
                quote_spanned!(ret_span=> #private::method_result::<#ret_ty>),
                quote!(::core::result::Result<#private::serde_json::Value, #mcp::Error>),
                quote!(#mcp::handler::MethodHandler),
            ),
            Macro::Prompt => (
                quote!(#private::invalid_prompt_argument),
                quote_spanned!(ret_span=> #private::prompt_result::<#ret_ty>),
                quote!(::core::result::Result<#mcp::GetPromptResult, #mcp::Error>),
                quote!(#mcp::handler::PromptHandler),
            ),
            Macro::Resource => (
                quote!(#private::invalid_resource_argument),
                quote_spanned!(ret_span=> (|value: #ret_ty| #private::resource_result::<#ret_ty>(value, __mcp_ctx, #mime))),
                quote!(::core::result::Result<#mcp::ReadResourceResult, #mcp::Error>),
                quote!(#mcp::handler::ResourceHandler),
            ),
        };
        Shape { invalid, convert, result_ty, handler_ty }
    }
}

/// The statements that read each parameter, the variables the function is called with, and what the injected
/// parameters need from the server.
struct Reads {
    reads: Vec<TokenStream>,
    call_args: Vec<syn::Ident>,
    injected: Vec<TokenStream>,
}

fn reads(mcp: &TokenStream, invalid: &TokenStream, params: &[Param], strings: bool) -> Reads {
    let private = quote!(#mcp::__private);
    // Flattened structs read the whole argument object first (borrowed), without the named arguments, which the
    // reads after them take out one by one.
    let named: Vec<&str> = params
        .iter()
        .filter_map(|p| match p {
            Param::Argument { name, .. } => Some(name.as_str()),
            _ => None,
        })
        .collect();
    let mut reads = Vec::new();
    for (i, p) in params.iter().enumerate() {
        if let Param::Flattened { ty, .. } = p {
            let var = format_ident!("__mcp_p{}", i);
            reads.push(quote_spanned! {ty.span()=>
                let #var: #ty = match (#private::flattened::<#ty>().read)(&__mcp_args, &[#(#named),*]) {
                    ::core::result::Result::Ok(v) => v,
                    ::core::result::Result::Err(message) => return #invalid(message),
                };
            });
        }
    }
    let mut call_args = Vec::new();
    let mut injected = Vec::new();
    for (i, p) in params.iter().enumerate() {
        let var = format_ident!("__mcp_p{}", i);
        match p {
            Param::Flattened { .. } => {}
            Param::Argument { name, ty, .. } => {
                let reader = params::reader(&private, ty, strings);
                reads.push(quote_spanned! {ty.span()=>
                let #var: #ty = match (#reader.read)(&mut __mcp_args, #name) {
                    ::core::result::Result::Ok(v) => v,
                    ::core::result::Result::Err(message) => return #invalid(message),
                };
                });
            }
            Param::Injected { ty } => {
                reads.push(quote_spanned! {ty.span()=>
                    let #var: &#ty = <#ty as #mcp::handler::FromContext>::from_context(__mcp_ctx)?;
                });
                injected.push(quote_spanned!(ty.span()=> <#ty as #mcp::handler::FromContext>::requirement));
            }
        }
        call_args.push(var);
    }
    Reads { reads, call_args, injected }
}

/// `fn __mcp_call(...)` and the handler that holds it: async for an `async fn`, blocking for a plain one.
fn call_fn(
    mcp: &TokenStream,
    function: &ItemFn,
    shape: &Shape,
    reads: &[TokenStream],
    call_args: &[syn::Ident],
) -> (TokenStream, TokenStream) {
    let private = quote!(#mcp::__private);
    let Shape { convert, result_ty, handler_ty, .. } = shape;
    let ident = &function.sig.ident;
    if function.sig.asyncness.is_some() {
        (
            quote! {
                fn __mcp_call<'a>(
                    __mcp_ctx: &'a #mcp::Context,
                    mut __mcp_args: #private::Arguments,
                ) -> #mcp::handler::BoxFuture<'a, #result_ty> {
                    ::std::boxed::Box::pin(#private::assert_send(async move {
                        #(#reads)*
                        #convert(#ident(#(#call_args),*).await)
                    }))
                }
            },
            quote!(#handler_ty::Async(__mcp_call)),
        )
    } else {
        (
            quote! {
                fn __mcp_call(__mcp_ctx: &#mcp::Context, mut __mcp_args: #private::Arguments) -> #result_ty {
                    #(#reads)*
                    #convert(#ident(#(#call_args),*))
                }
            },
            quote!(#handler_ty::Blocking(__mcp_call)),
        )
    }
}

/// The input schema's statements: one property per argument (and its `Mcp-Param-*` header), the fields of each
/// flattened struct.
pub(crate) fn properties(private: &TokenStream, params: &[Param]) -> Vec<TokenStream> {
    params
        .iter()
        .filter_map(|p| match p {
            Param::Argument { name, ty, doc, header } => {
                let doc = match doc {
                    Some(d) => quote!(::core::option::Option::Some(#d)),
                    None => quote!(::core::option::Option::None),
                };
                let mirror = header.as_ref().map(
                    |h| quote_spanned!(ty.span()=> (#private::header_arg::<#ty>())(&mut __mcp_schema, #name, #h);),
                );
                let reader = params::reader(private, ty, false);
                Some(quote_spanned!(ty.span()=> (#reader.describe)(&mut __mcp_schema, #name, #doc); #mirror))
            }
            Param::Flattened { name, ty } => {
                Some(quote_spanned!(ty.span()=> (#private::flattened::<#ty>().describe)(&mut __mcp_schema, #name);))
            }
            Param::Injected { .. } => None,
        })
        .collect()
}

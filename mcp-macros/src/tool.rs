//! `#[mcp::tool]`: parse the options, validate the function, emit the glue beside it.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};

use crate::handler::{self, Glue, Kind};
use syn::parse::{Parse, ParseStream};
use syn::spanned::Spanned;
use syn::{ItemFn, LitBool, LitInt, LitStr, Token};

use crate::attr::{flag_value, set, string_value, Common};

use crate::diagnostics::{self, Errors};
use crate::params::{self, Param};
use crate::{docs, paths};

mod kw {
    syn::custom_keyword!(read_only);
    syn::custom_keyword!(destructive);
    syn::custom_keyword!(idempotent);
    syn::custom_keyword!(open_world);
    syn::custom_keyword!(task);
    syn::custom_keyword!(defer_task);
    syn::custom_keyword!(task_ttl_ms);
    syn::custom_keyword!(task_poll_ms);
}

/// The options of `#[mcp::tool(...)]`: the shared ones and the behaviour hints.
#[derive(Default)]
struct Options {
    common: Common,
    read_only: Option<LitBool>,
    destructive: Option<LitBool>,
    idempotent: Option<LitBool>,
    open_world: Option<LitBool>,
    /// `task = "optional" | "required" | "forbidden"`.
    task: Option<LitStr>,
    defer_task: Option<LitBool>,
    task_ttl_ms: Option<LitInt>,
    task_poll_ms: Option<LitInt>,
}

impl Parse for Options {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut o = Options::default();
        o.common = Common::parse_with(input, |input, lookahead, span| {
            let (slot, key) = if lookahead.peek(kw::read_only) {
                input.parse::<kw::read_only>()?;
                (&mut o.read_only, "read_only")
            } else if lookahead.peek(kw::destructive) {
                input.parse::<kw::destructive>()?;
                (&mut o.destructive, "destructive")
            } else if lookahead.peek(kw::idempotent) {
                input.parse::<kw::idempotent>()?;
                (&mut o.idempotent, "idempotent")
            } else if lookahead.peek(kw::open_world) {
                input.parse::<kw::open_world>()?;
                (&mut o.open_world, "open_world")
            } else if lookahead.peek(kw::task) {
                input.parse::<kw::task>()?;
                let value = string_value(input)?;
                if !matches!(value.value().as_str(), "optional" | "required" | "forbidden") {
                    return Err(syn::Error::new(
                        value.span(),
                        "`task` is \"optional\" (a task when the client asks for one), \"required\" (always a task) or \"forbidden\"",
                    ));
                }
                set(&mut o.task, value, span, "task")?;
                return Ok(true);
            } else if lookahead.peek(kw::task_ttl_ms) {
                input.parse::<kw::task_ttl_ms>()?;
                set(&mut o.task_ttl_ms, milliseconds(input, "task_ttl_ms")?, span, "task_ttl_ms")?;
                return Ok(true);
            } else if lookahead.peek(kw::task_poll_ms) {
                input.parse::<kw::task_poll_ms>()?;
                set(&mut o.task_poll_ms, milliseconds(input, "task_poll_ms")?, span, "task_poll_ms")?;
                return Ok(true);
            } else if lookahead.peek(kw::defer_task) {
                input.parse::<kw::defer_task>()?;
                (&mut o.defer_task, "defer_task")
            } else {
                return Ok(false);
            };
            set(slot, flag_value(input, span)?, span, key)?;
            Ok(true)
        })?;
        Ok(o)
    }
}

/// `= N`: a number of milliseconds above 0.
fn milliseconds(input: ParseStream, key: &str) -> syn::Result<LitInt> {
    input.parse::<Token![=]>()?;
    let value: LitInt = input.parse()?;
    if value.base10_parse::<u64>().map_or(true, |v| v == 0) {
        return Err(syn::Error::new(value.span(), format!("`{key}` is a number of milliseconds above 0")));
    }
    Ok(value)
}

/// A validated tool, ready to expand.
struct Tool {
    options: Options,
    function: ItemFn,
    name: String,
    /// The function's doc comment (the description unless the option gives one).
    doc: Option<String>,
    params: Vec<Param>,
}

/// The tool name rule of MCP 2025-11-25: 1 to 128 characters of `A-Z a-z 0-9 _ - .`.
fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > 128 {
        return Err(format!("tool name `{name}` must be 1 to 128 characters long"));
    }
    if let Some(c) = name.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))) {
        return Err(format!("tool name `{name}` has `{c}`: use only letters, digits, `_`, `-` and `.`"));
    }
    Ok(())
}

fn validate(options: Options, mut function: ItemFn) -> Result<Tool, Box<(ItemFn, syn::Error)>> {
    let mut errors = Errors::default();
    let sig = &function.sig;
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        errors.push_spanned(&sig.generics, "tool functions cannot be generic: the schema needs concrete types");
    }
    if let Some(v) = &sig.variadic {
        errors.push_spanned(v, "tool functions cannot be variadic");
    }
    if let Some(c) = &sig.constness {
        errors.push_spanned(c, "tool functions cannot be `const`");
    }
    if let syn::ReturnType::Type(_, ty) = &sig.output {
        if matches!(**ty, syn::Type::ImplTrait(_)) {
            errors.push_spanned(ty, "a tool cannot return `impl Trait`: name the return type");
        }
    }
    let name = match &options.common.name {
        Some(lit) => {
            let n = lit.value();
            if let Err(e) = check_name(&n) {
                errors.push_spanned(lit, e);
            }
            n
        }
        None => function.sig.ident.to_string().trim_start_matches("r#").to_owned(),
    };
    let runs_as_task = options.task.as_ref().is_some_and(|t| t.value() != "forbidden");
    if !runs_as_task {
        let companions: [(&str, Option<proc_macro2::Span>); 3] = [
            ("defer_task", options.defer_task.as_ref().map(|v| v.span())),
            ("task_ttl_ms", options.task_ttl_ms.as_ref().map(|v| v.span())),
            ("task_poll_ms", options.task_poll_ms.as_ref().map(|v| v.span())),
        ];
        for (key, span) in companions {
            if let Some(span) = span {
                errors.push(syn::Error::new(
                    span,
                    format!("`{key}` applies to a tool that runs as a task: add `task = \"optional\"` or `task = \"required\"`"),
                ));
            }
        }
    }
    let doc = docs::collect(&function.attrs);
    let params = params::classify(&mut function.sig, "tool", &mut errors);
    match errors.finish() {
        Ok(()) => Ok(Tool { options, function, name, doc, params }),
        Err(e) => Err(Box::new((function, e))),
    }
}

pub(crate) fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    let function: ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(e) => return diagnostics::with_item(item, e),
    };
    let options: Options = match syn::parse2(attr) {
        Ok(o) => o,
        Err(e) => return diagnostics::with_item(strip_param_docs(function), e),
    };
    let tokens = match validate(options, function) {
        Ok(tool) => emit(&tool),
        Err(failed) => {
            let (function, e) = *failed;
            diagnostics::with_item(quote!(#function), e)
        }
    };
    diagnostics::debug_print(&item_name(&tokens), &tokens);
    tokens
}

fn item_name(tokens: &TokenStream) -> String {
    syn::parse2::<syn::File>(tokens.clone())
        .ok()
        .and_then(|f| {
            f.items.into_iter().find_map(
                |i| {
                    if let syn::Item::Fn(f) = i {
                        Some(f.sig.ident.to_string())
                    } else {
                        None
                    }
                },
            )
        })
        .unwrap_or_default()
}

/// The function with parameter docs removed, for error paths.
fn strip_param_docs(mut function: ItemFn) -> TokenStream {
    for input in function.sig.inputs.iter_mut() {
        if let syn::FnArg::Typed(t) = input {
            docs::strip(&mut t.attrs);
        }
    }
    quote!(#function)
}

fn emit(tool: &Tool) -> TokenStream {
    let mcp = paths::runtime(tool.options.common.krate.as_ref());
    let private = quote!(#mcp::__private);
    let function = &tool.function;
    let name = &tool.name;
    let ret_ty = match &function.sig.output {
        syn::ReturnType::Default => quote!(()),
        syn::ReturnType::Type(_, ty) => quote!(#ty),
    };
    let ret_span = match &function.sig.output {
        syn::ReturnType::Default => function.sig.ident.span(),
        syn::ReturnType::Type(_, ty) => ty.span(),
    };

    // Schema: one property per argument.
    let properties = tool.params.iter().filter_map(|p| match p {
        Param::Argument { name, ty, doc, header } => {
            let doc = match doc {
                Some(d) => quote!(::core::option::Option::Some(#d)),
                None => quote!(::core::option::Option::None),
            };
            let mirror = header
                .as_ref()
                .map(|h| quote_spanned!(ty.span()=> (#private::header_arg::<#ty>())(&mut __mcp_schema, #name, #h);));
            let reader = params::reader(&private, ty, false);
            Some(quote_spanned!(ty.span()=> (#reader.describe)(&mut __mcp_schema, #name, #doc); #mirror))
        }
        Param::Flattened { name, ty } => {
            Some(quote_spanned!(ty.span()=> (#private::flattened::<#ty>().describe)(&mut __mcp_schema, #name);))
        }
        Param::Injected { .. } => None,
    });
    let output_schema = quote_spanned!(ret_span=> #private::returns::<#ret_ty>().output_schema);
    let Glue { call_fn, handler, injects } = handler::glue(&Kind::Tool, &mcp, function, &tool.params);

    let mut builder = tool.options.common.builder(tool.doc.clone());
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
        builder.extend(quote!(.hints(#mcp::Hints::NONE #(#hints)*)));
    }
    if let Some(task) = &tool.options.task {
        let support = match task.value().as_str() {
            "optional" => quote!(Optional),
            "required" => quote!(Required),
            _ => quote!(Forbidden),
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
    if !tool.params.iter().any(|p| matches!(p, Param::Injected { .. })) {
        builder.extend(quote!(.cannot_ask()));
    }

    let body = quote! {
        fn __mcp_input_schema() -> #private::serde_json::Value {
            let mut __mcp_schema = #mcp::ObjectSchema::new();
            #(#properties)*
            __mcp_schema.finish()
        }
        #call_fn
    };
    let def = quote! {
        #mcp::ToolDef::new(
            #name,
            __mcp_input_schema,
            #output_schema,
            #handler,
            ::core::concat!(::core::file!(), ":", ::core::line!()),
        )
        #builder
        #injects
    };
    paths::item(&mcp, function, "Tool", body, def)
}

//! `#[mcp::tool]`: the options, their validation against the function, the glue beside it.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::parse::{Parse, ParseStream};
use syn::spanned::Spanned;
use syn::{LitBool, LitInt, LitStr, Token};

use crate::attr::{flag_value, set, string_value, Common};
use crate::diagnostics::Errors;
use crate::function::{self, Function, HandlerMacro, Macro};
use crate::handler::{self, Glue, Kind};
use crate::params::{self, Param};
use crate::paths;

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

/// The options of `#[mcp::tool(...)]` as written: the shared ones, the behaviour hints, how it runs as a task.
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
                set(&mut o.task, string_value(input)?, span, "task")?;
                return Ok(true);
            } else if lookahead.peek(kw::task_ttl_ms) {
                input.parse::<kw::task_ttl_ms>()?;
                input.parse::<Token![=]>()?;
                set(&mut o.task_ttl_ms, input.parse()?, span, "task_ttl_ms")?;
                return Ok(true);
            } else if lookahead.peek(kw::task_poll_ms) {
                input.parse::<kw::task_poll_ms>()?;
                input.parse::<Token![=]>()?;
                set(&mut o.task_poll_ms, input.parse()?, span, "task_poll_ms")?;
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

/// How a tool runs as a task (`task = "..."`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum TaskSupport {
    Optional,
    Required,
    Forbidden,
}

/// A validated tool's configuration.
struct Tool {
    options: Options,
    /// The tool's name: the `name` option or the function's.
    name: String,
    task: Option<TaskSupport>,
}

/// The tool name rule of MCP 2025-11-25: 1 to 128 characters of `A-Z a-z 0-9 _ - .` (the runtime's
/// `check_tool_name` applies the same rule to every definition a server is given).
fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > 128 {
        return Err(format!("tool name `{name}` must be 1 to 128 characters long"));
    }
    if let Some(c) = name.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))) {
        return Err(format!("tool name `{name}` has `{c}`: use only letters, digits, `_`, `-` and `.`"));
    }
    Ok(())
}

/// `task_ttl_ms` and `task_poll_ms` are numbers of milliseconds above 0.
fn check_milliseconds(value: &Option<LitInt>, key: &str, errors: &mut Errors) {
    if let Some(value) = value {
        if value.base10_parse::<u64>().map_or(true, |v| v == 0) {
            errors.push_spanned(value, format!("`{key}` is a number of milliseconds above 0"));
        }
    }
}

pub(crate) fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    function::expand::<ToolMacro>(attr, item)
}

struct ToolMacro;

impl HandlerMacro for ToolMacro {
    const MACRO: Macro = Macro::Tool;
    type Options = Options;
    type Config = Tool;

    fn validate(options: Options, item: &Function, errors: &mut Errors) -> Option<Tool> {
        options.common.check(errors);
        let name = match &options.common.name {
            Some(lit) => {
                if let Err(e) = check_name(&lit.value()) {
                    errors.push_spanned(lit, e);
                }
                lit.value()
            }
            None => {
                if let Err(e) = check_name(&item.name) {
                    errors.push_spanned(&item.function.sig.ident, format!("{e}; or name it with `name = \"...\"`"));
                }
                item.name.clone()
            }
        };
        let task = options.task.as_ref().and_then(|lit| match lit.value().as_str() {
            "optional" => Some(TaskSupport::Optional),
            "required" => Some(TaskSupport::Required),
            "forbidden" => Some(TaskSupport::Forbidden),
            _ => {
                errors.push_spanned(
                    lit,
                    "`task` is \"optional\" (a task when the client asks for one), \"required\" (always a task) or \"forbidden\"",
                );
                None
            }
        });
        check_milliseconds(&options.task_ttl_ms, "task_ttl_ms", errors);
        check_milliseconds(&options.task_poll_ms, "task_poll_ms", errors);
        // An unknown `task` value is reported above; the companions are not reported against it too.
        let runs_as_task = options.task.is_some() && task != Some(TaskSupport::Forbidden);
        if !runs_as_task {
            let companions: [(&str, Option<Span>); 3] = [
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
        Some(Tool { options, name, task })
    }

    fn expand(tool: &Tool, item: &Function) -> TokenStream {
        emit(tool, item)
    }
}

fn emit(tool: &Tool, item: &Function) -> TokenStream {
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

    // Schema: one property per argument.
    let properties = item.params.iter().filter_map(|p| match p {
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
    let Glue { call_fn, handler, injects } = handler::glue(&Kind::Tool, &mcp, function, &item.params);

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
        builder.extend(quote!(.hints(#mcp::Hints::NONE #(#hints)*)));
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

    let body = quote! {
        fn __mcp_input_schema() -> ::core::result::Result<#private::serde_json::Value, #mcp::SchemaError> {
            let mut __mcp_schema = #mcp::ObjectSchema::new();
            #(#properties)*
            __mcp_schema.finish()
        }
        #call_fn
    };
    let def = quote! {
        #mcp::ToolDef::built(
            #name,
            #mcp::InputSchema::Built(__mcp_input_schema),
            #output_schema,
            #handler,
            ::core::concat!(::core::file!(), ":", ::core::line!()),
        )
        #builder
        #injects
    };
    paths::item(&mcp, function, "Tool", body, def)
}

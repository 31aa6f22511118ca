//! `#[mcp::tool]`: parse the options, validate the function, emit the glue beside it.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};

use crate::handler::{self, Glue, Kind};
use syn::parse::{Parse, ParseStream};
use syn::spanned::Spanned;
use syn::{ItemFn, LitBool, LitStr, Token};

use crate::diagnostics::{self, Errors};
use crate::params::{self, Param};
use crate::{docs, paths};

mod kw {
    syn::custom_keyword!(name);
    syn::custom_keyword!(title);
    syn::custom_keyword!(description);
    syn::custom_keyword!(read_only);
    syn::custom_keyword!(destructive);
    syn::custom_keyword!(idempotent);
    syn::custom_keyword!(open_world);
    syn::custom_keyword!(icon);
}

/// The options of `#[mcp::tool(...)]`.
#[derive(Default)]
struct Options {
    name: Option<LitStr>,
    title: Option<LitStr>,
    description: Option<LitStr>,
    read_only: Option<LitBool>,
    destructive: Option<LitBool>,
    idempotent: Option<LitBool>,
    open_world: Option<LitBool>,
    icons: Vec<LitStr>,
    krate: Option<syn::Path>,
}

fn set<T>(slot: &mut Option<T>, value: T, key_span: Span, key: &str) -> syn::Result<()> {
    if slot.is_some() {
        return Err(syn::Error::new(key_span, format!("duplicate option `{key}`")));
    }
    *slot = Some(value);
    Ok(())
}

/// `key = "string"`.
fn string_value(input: ParseStream) -> syn::Result<LitStr> {
    input.parse::<Token![=]>()?;
    input.parse()
}

/// `key` alone (true) or `key = true|false`.
fn flag_value(input: ParseStream, key_span: Span) -> syn::Result<LitBool> {
    if input.peek(Token![=]) {
        input.parse::<Token![=]>()?;
        input.parse()
    } else {
        Ok(LitBool::new(true, key_span))
    }
}

impl Parse for Options {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut o = Options::default();
        while !input.is_empty() {
            let lookahead = input.lookahead1();
            let span = input.span();
            if lookahead.peek(kw::name) {
                input.parse::<kw::name>()?;
                set(&mut o.name, string_value(input)?, span, "name")?;
            } else if lookahead.peek(kw::title) {
                input.parse::<kw::title>()?;
                set(&mut o.title, string_value(input)?, span, "title")?;
            } else if lookahead.peek(kw::description) {
                input.parse::<kw::description>()?;
                set(&mut o.description, string_value(input)?, span, "description")?;
            } else if lookahead.peek(kw::read_only) {
                input.parse::<kw::read_only>()?;
                set(&mut o.read_only, flag_value(input, span)?, span, "read_only")?;
            } else if lookahead.peek(kw::destructive) {
                input.parse::<kw::destructive>()?;
                set(&mut o.destructive, flag_value(input, span)?, span, "destructive")?;
            } else if lookahead.peek(kw::idempotent) {
                input.parse::<kw::idempotent>()?;
                set(&mut o.idempotent, flag_value(input, span)?, span, "idempotent")?;
            } else if lookahead.peek(kw::open_world) {
                input.parse::<kw::open_world>()?;
                set(&mut o.open_world, flag_value(input, span)?, span, "open_world")?;
            } else if lookahead.peek(kw::icon) {
                input.parse::<kw::icon>()?;
                o.icons.push(string_value(input)?);
            } else if lookahead.peek(Token![crate]) {
                input.parse::<Token![crate]>()?;
                let path: LitStr = string_value(input)?;
                set(&mut o.krate, path.parse()?, span, "crate")?;
            } else {
                return Err(lookahead.error());
            }
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
        }
        Ok(o)
    }
}

/// A validated tool, ready to expand.
struct Tool {
    options: Options,
    function: ItemFn,
    name: String,
    description: Option<String>,
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
    let name = match &options.name {
        Some(lit) => {
            let n = lit.value();
            if let Err(e) = check_name(&n) {
                errors.push_spanned(lit, e);
            }
            n
        }
        None => function.sig.ident.to_string().trim_start_matches("r#").to_owned(),
    };
    let description = options.description.as_ref().map(LitStr::value).or_else(|| docs::collect(&function.attrs));
    let params = params::classify(&mut function.sig, "tool", &mut errors);
    match errors.finish() {
        Ok(()) => Ok(Tool { options, function, name, description, params }),
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
    let mcp = paths::runtime(tool.options.krate.as_ref());
    let private = quote!(#mcp::__private);
    let allows = paths::allows();
    let function = &tool.function;
    let vis = &function.vis;
    let ident = &function.sig.ident;
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
        Param::Argument { name, ty, doc } => {
            let doc = match doc {
                Some(d) => quote!(::core::option::Option::Some(#d)),
                None => quote!(::core::option::Option::None),
            };
            Some(quote_spanned!(ty.span()=> (#private::arg::<#ty>().describe)(&mut __mcp_schema, #name, #doc);))
        }
        Param::Injected { .. } => None,
    });
    let output_schema = quote_spanned!(ret_span=> #private::returns::<#ret_ty>().output_schema);
    let Glue { call_fn, handler, injects } = handler::glue(&Kind::Tool, &mcp, function, &tool.params);

    let mut builder = quote!();
    if let Some(t) = &tool.options.title {
        builder.extend(quote!(.title(#t)));
    }
    if let Some(d) = &tool.description {
        builder.extend(quote!(.description(#d)));
    }
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
    if !tool.options.icons.is_empty() {
        let icons = &tool.options.icons;
        builder.extend(quote!(.icons(&[#(#icons),*])));
    }
    if !hints.is_empty() {
        builder.extend(quote!(.hints(#mcp::Hints::NONE #(#hints)*)));
    }

    quote! {
        #function

        #[doc(hidden)]
        #allows
        #vis struct #ident {}

        #[automatically_derived]
        #allows
        impl #mcp::ToolItem for #ident {
            const DEF: &'static #mcp::ToolDef = &{
                fn __mcp_input_schema() -> #private::serde_json::Value {
                    let mut __mcp_schema = #mcp::ObjectSchema::new();
                    #(#properties)*
                    __mcp_schema.finish()
                }
                #call_fn
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
        }

        #private::inventory::submit! {
            #private::ToolRegistration(<#ident as #mcp::ToolItem>::DEF)
        }
    }
}

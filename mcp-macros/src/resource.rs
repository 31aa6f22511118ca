//! `#[mcp::resource(uri = "...")]`: a resource at a fixed URI, or, when the URI has `{variables}`, a resource
//! template whose variables bind to the function's parameters by name.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::parse::{Parse, ParseStream};
use syn::{Ident, LitFloat, LitInt, LitStr, Token};

use crate::attr::{self, path_value, set, string_value, Common};
use crate::diagnostics::Errors;
use crate::function::{self, Function, HandlerMacro, Macro};
use crate::handler::{self, Glue, Kind};
use crate::params::Param;
use crate::paths;

mod kw {
    syn::custom_keyword!(uri);
    syn::custom_keyword!(mime_type);
    syn::custom_keyword!(size);
    syn::custom_keyword!(audience);
    syn::custom_keyword!(priority);
    syn::custom_keyword!(complete);
    syn::custom_keyword!(list);
    syn::custom_keyword!(ttl_ms);
    syn::custom_keyword!(cache_scope);
}

/// The options of `#[mcp::resource(...)]` as written: the shared ones and the resource's own.
#[derive(Default)]
struct Options {
    common: Common,
    uri: Option<LitStr>,
    mime_type: Option<LitStr>,
    size: Option<LitInt>,
    audience: Option<LitStr>,
    priority: Option<LitFloat>,
    completions: Option<Vec<(Ident, syn::Path)>>,
    list: Option<syn::Path>,
    ttl_ms: Option<LitInt>,
    cache_scope: Option<LitStr>,
}

impl Parse for Options {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut o = Options::default();
        o.common = Common::parse_with(input, |input, lookahead, span| {
            if lookahead.peek(kw::uri) {
                input.parse::<kw::uri>()?;
                set(&mut o.uri, string_value(input)?, span, "uri")?;
            } else if lookahead.peek(kw::mime_type) {
                input.parse::<kw::mime_type>()?;
                set(&mut o.mime_type, string_value(input)?, span, "mime_type")?;
            } else if lookahead.peek(kw::size) {
                input.parse::<kw::size>()?;
                input.parse::<Token![=]>()?;
                set(&mut o.size, input.parse()?, span, "size")?;
            } else if lookahead.peek(kw::audience) {
                input.parse::<kw::audience>()?;
                set(&mut o.audience, string_value(input)?, span, "audience")?;
            } else if lookahead.peek(kw::priority) {
                input.parse::<kw::priority>()?;
                input.parse::<Token![=]>()?;
                set(&mut o.priority, input.parse()?, span, "priority")?;
            } else if lookahead.peek(kw::complete) {
                input.parse::<kw::complete>()?;
                set(&mut o.completions, attr::completions(input)?, span, "complete")?;
            } else if lookahead.peek(kw::list) {
                input.parse::<kw::list>()?;
                set(&mut o.list, path_value(input)?, span, "list")?;
            } else if lookahead.peek(kw::ttl_ms) {
                input.parse::<kw::ttl_ms>()?;
                input.parse::<Token![=]>()?;
                set(&mut o.ttl_ms, input.parse()?, span, "ttl_ms")?;
            } else if lookahead.peek(kw::cache_scope) {
                input.parse::<kw::cache_scope>()?;
                set(&mut o.cache_scope, string_value(input)?, span, "cache_scope")?;
            } else {
                return Ok(false);
            }
            Ok(true)
        })?;
        Ok(o)
    }
}

/// The variables of a URI template (`{name}` and `{+name}`), or why it cannot be matched. The runtime parses the same
/// subset of RFC 6570 when the server is built.
fn template_variables(template: &str) -> Result<Vec<String>, String> {
    let mut vars = Vec::new();
    let mut rest = template;
    let mut previous_was_var = false;
    while let Some(open) = rest.find('{') {
        if open > 0 {
            previous_was_var = false;
        }
        let close = rest[open..].find('}').map(|c| open + c).ok_or(format!("`{{` is never closed in `{template}`"))?;
        let expr = &rest[open + 1..close];
        let name = expr.strip_prefix('+').unwrap_or(expr);
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!(
                "`{{{expr}}}` is not supported in a URI template: write `{{name}}` (one segment) or `{{+name}}` (slashes too)"
            ));
        }
        if previous_was_var {
            return Err(format!("two variables in a row in `{template}` cannot be told apart; put text between them"));
        }
        if vars.iter().any(|v| v == name) {
            return Err(format!("`{name}` appears twice in `{template}`"));
        }
        vars.push(name.to_owned());
        previous_was_var = true;
        rest = &rest[close + 1..];
    }
    if rest.contains('}') {
        return Err(format!("`}}` without `{{` in `{template}`"));
    }
    Ok(vars)
}

pub(crate) fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    function::expand::<ResourceMacro>(attr, item)
}

/// Who a resource is for (`audience = "..."`).
enum Role {
    User,
    Assistant,
}

/// Who may cache its reads (`cache_scope = "..."`).
enum CacheScope {
    Public,
    Private,
}

/// A validated resource's configuration.
struct Resource {
    options: Options,
    uri: LitStr,
    /// Whether the URI has variables: a resource template.
    template: bool,
    /// The resource's name: the `name` option or the function's.
    name: String,
    audience: Vec<Role>,
    cache_scope: Option<CacheScope>,
}

struct ResourceMacro;

impl HandlerMacro for ResourceMacro {
    const MACRO: Macro = Macro::Resource;
    type Options = Options;
    type Config = Resource;

    fn validate(options: Options, item: &Function, errors: &mut Errors) -> Option<Resource> {
        options.common.check(errors);
        let arguments: Vec<(&str, proc_macro2::Span)> = item
            .params
            .iter()
            .filter_map(|p| match p {
                Param::Argument { name, ty, .. } => Some((name.as_str(), syn::spanned::Spanned::span(ty))),
                Param::Injected { .. } | Param::Flattened { .. } => None,
            })
            .collect();
        let mut template = false;
        match &options.uri {
            None => {
                errors.push(syn::Error::new(proc_macro2::Span::call_site(), "#[mcp::resource] needs `uri = \"...\"`"))
            }
            Some(lit) => match template_variables(&lit.value()) {
                Err(e) => errors.push_spanned(lit, e),
                Ok(vars) => {
                    template = !vars.is_empty() || lit.value().contains('{');
                    for var in &vars {
                        if !arguments.iter().any(|(n, _)| n == var) {
                            errors
                                .push_spanned(lit, format!("template variable `{var}` has no parameter of that name"));
                        }
                    }
                    for (name, span) in &arguments {
                        if !vars.iter().any(|v| v == name) {
                            errors.push(syn::Error::new(
                                *span,
                                if template {
                                    format!("parameter `{name}` is not a variable of the URI template")
                                } else {
                                    format!(
                                        "parameter `{name}` has nothing to bind to: a resource at a fixed URI takes only injected parameters (`&Context`, `&State<T>`); use `{{{name}}}` in the URI to make it a template"
                                    )
                                },
                            ));
                        }
                    }
                }
            },
        }
        if let Some(completions) = &options.completions {
            let names: Vec<&str> = arguments.iter().map(|(n, _)| *n).collect();
            attr::check_completions(completions, &names, "the template has no variable", errors);
        }
        if let (Some(list), false) = (&options.list, template) {
            errors.push_spanned(list, "`list` belongs on a resource template: a fixed resource is listed already");
        }
        let mut audience = Vec::new();
        if let Some(lit) = &options.audience {
            for part in lit.value().split(',').map(str::trim) {
                match part {
                    "user" => audience.push(Role::User),
                    "assistant" => audience.push(Role::Assistant),
                    _ => errors.push_spanned(
                        lit,
                        format!("unknown audience `{part}`: write \"user\", \"assistant\" or \"user, assistant\""),
                    ),
                }
            }
        }
        if let Some(p) = &options.priority {
            if !matches!(p.base10_parse::<f64>(), Ok(v) if (0.0..=1.0).contains(&v)) {
                errors.push_spanned(p, "`priority` is a number from 0.0 to 1.0");
            }
        }
        let cache_scope = match &options.cache_scope {
            None => None,
            Some(lit) => match lit.value().as_str() {
                "public" => Some(CacheScope::Public),
                "private" => Some(CacheScope::Private),
                other => {
                    errors.push_spanned(lit, format!("unknown cache scope `{other}`: write \"public\" or \"private\""));
                    None
                }
            },
        };
        if let Some(t) = &options.ttl_ms {
            if t.base10_parse::<u64>().is_err() {
                errors.push_spanned(t, "`ttl_ms` is a whole number of milliseconds");
            }
        }
        let uri = options.uri.clone()?;
        let name = options.common.name.as_ref().map_or_else(|| item.name.clone(), LitStr::value);
        Some(Resource { options, uri, template, name, audience, cache_scope })
    }

    fn expand(resource: &Resource, item: &Function) -> TokenStream {
        let Resource { options, uri, template, name, audience, cache_scope } = resource;
        let mcp = paths::runtime(options.common.krate.as_ref());
        let mime = match &options.mime_type {
            Some(m) => quote!(::core::option::Option::Some(#m)),
            None => quote!(::core::option::Option::None),
        };
        let Glue { call_fn, handler, injects } =
            handler::glue(&Kind::Resource(mime), &mcp, &item.function, &item.params);
        let constructor = if *template { quote!(template) } else { quote!(fixed) };
        let mut builder = quote!(#injects);
        builder.extend(options.common.builder(item.doc.clone()));
        if let Some(m) = &options.mime_type {
            builder.extend(quote!(.mime_type(#m)));
        }
        if let Some(s) = &options.size {
            builder.extend(quote!(.size(#s)));
        }
        if !audience.is_empty() {
            let roles = audience.iter().map(|role| match role {
                Role::User => quote!(#mcp::Role::User),
                Role::Assistant => quote!(#mcp::Role::Assistant),
            });
            builder.extend(quote!(.audience(&[#(#roles),*])));
        }
        if let Some(p) = &options.priority {
            builder.extend(quote!(.priority(#p)));
        }
        if let Some(c) = &options.completions {
            let c = attr::completions_tokens(&mcp, c);
            builder.extend(quote!(.completions(#c)));
        }
        if let Some(list) = &options.list {
            let list = quote_spanned!(syn::spanned::Spanned::span(list)=> #mcp::__private::lister(#list));
            builder.extend(quote!(.list(#list)));
        }
        if options.ttl_ms.is_some() || cache_scope.is_some() {
            let ttl = options.ttl_ms.as_ref().map(|t| quote!(#t)).unwrap_or(quote!(0));
            let scope = match cache_scope {
                Some(CacheScope::Public) => quote!(Public),
                Some(CacheScope::Private) | None => quote!(Private),
            };
            builder.extend(quote!(.cache(#ttl, #mcp::CacheScope::#scope)));
        }
        let def = quote! {
            #mcp::ResourceDef::#constructor(
                #uri,
                #name,
                #handler,
                ::core::concat!(::core::file!(), ":", ::core::line!()),
            )
            #builder
        };
        paths::item(&mcp, &item.function, "Resource", call_fn, def)
    }
}

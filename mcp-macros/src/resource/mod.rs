//! `#[mcp::resource(uri = "...")]`: a resource at a fixed URI, or, when the URI has `{variables}`, a resource
//! template whose variables bind to the function's parameters by name.
//!
//! Parsed in [`options`] (the options as written), validated here against the function, expanded in [`expand`].

mod expand;
mod options;

use proc_macro2::TokenStream;
use syn::LitStr;

use crate::attr;
use crate::diagnostics::Errors;
use crate::function::{self, Function, HandlerMacro};
use crate::params::Param;
use crate::which::Macro;

use options::Options;

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
pub(crate) enum Role {
    User,
    Assistant,
}

/// Who may cache its reads (`cache_scope = "..."`).
pub(crate) enum CacheScope {
    Public,
    Private,
}

/// A validated resource's configuration.
pub(crate) struct Resource {
    pub(crate) options: Options,
    pub(crate) uri: LitStr,
    /// Whether the URI has variables: a resource template.
    pub(crate) template: bool,
    /// The resource's name: the `name` option or the function's.
    pub(crate) name: String,
    pub(crate) audience: Vec<Role>,
    pub(crate) cache_scope: Option<CacheScope>,
}

struct ResourceMacro;

impl HandlerMacro for ResourceMacro {
    const MACRO: Macro = Macro::Resource;
    type Options = Options;
    type Config = Resource;

    fn validate(options: Options, item: &Function, errors: &mut Errors) -> Option<Resource> {
        options.common.check(errors);
        let arguments = arguments(item);
        let template = match &options.uri {
            None => {
                errors.push(syn::Error::new(proc_macro2::Span::call_site(), "#[mcp::resource] needs `uri = \"...\"`"));
                false
            }
            Some(lit) => check_uri(lit, &arguments, errors),
        };
        if let Some(completions) = &options.completions {
            let names: Vec<&str> = arguments.iter().map(|(n, _)| *n).collect();
            attr::check_completions(completions, &names, "the template has no variable", errors);
        }
        if let (Some(list), false) = (&options.list, template) {
            errors.push_spanned(list, "`list` belongs on a resource template: a fixed resource is listed already");
        }
        let audience = options.audience.as_ref().map_or_else(Vec::new, |lit| audience(lit, errors));
        if let Some(p) = &options.priority {
            if !matches!(p.base10_parse::<f64>(), Ok(v) if (0.0..=1.0).contains(&v)) {
                errors.push_spanned(p, "`priority` is a number from 0.0 to 1.0");
            }
        }
        let cache_scope = options.cache_scope.as_ref().and_then(|lit| cache_scope(lit, errors));
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
        expand::emit(resource, item)
    }
}

/// The function's arguments (the parameters the URI's variables bind to), each with its type's span.
fn arguments(item: &Function) -> Vec<(&str, proc_macro2::Span)> {
    item.params
        .iter()
        .filter_map(|p| match p {
            Param::Argument { name, ty, .. } => Some((name.as_str(), syn::spanned::Spanned::span(ty))),
            Param::Injected { .. } | Param::Flattened { .. } => None,
        })
        .collect()
}

/// Whether the URI `lit` is a template; its variables and the function's arguments must match one to one.
fn check_uri(lit: &LitStr, arguments: &[(&str, proc_macro2::Span)], errors: &mut Errors) -> bool {
    let vars = match template_variables(&lit.value()) {
        Err(e) => {
            errors.push_spanned(lit, e);
            return false;
        }
        Ok(vars) => vars,
    };
    let template = !vars.is_empty() || lit.value().contains('{');
    for var in &vars {
        if !arguments.iter().any(|(n, _)| n == var) {
            errors.push_spanned(lit, format!("template variable `{var}` has no parameter of that name"));
        }
    }
    for (name, span) in arguments {
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
    template
}

/// The roles `audience = "..."` names, comma-separated; an unknown one is reported.
fn audience(lit: &LitStr, errors: &mut Errors) -> Vec<Role> {
    let mut audience = Vec::new();
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
    audience
}

/// The scope `cache_scope = "..."` names; an unknown one is reported.
fn cache_scope(lit: &LitStr, errors: &mut Errors) -> Option<CacheScope> {
    match lit.value().as_str() {
        "public" => Some(CacheScope::Public),
        "private" => Some(CacheScope::Private),
        other => {
            errors.push_spanned(lit, format!("unknown cache scope `{other}`: write \"public\" or \"private\""));
            None
        }
    }
}

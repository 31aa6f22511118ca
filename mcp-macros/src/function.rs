//! The three phases every handler macro (`tool`, `prompt`, `resource`, `method`) runs, and the checks they share.
//!
//! 1. Parse: the attribute into the macro's options, the item into the function and its parameters as written.
//! 2. Validate: the function (the checks here), its parameters (`params`), then the options against them (the
//!    macro's own); every error is collected, then they are combined.
//! 3. Expand: from the validated handler and configuration only.
//!
//! On error the function is emitted as written, without our parameter attributes, beside every error, so one
//! mistake gives one message and the rest of the crate still sees the function.

use crate::item_fn::ItemFn;
use proc_macro2::TokenStream;
use quote::quote;
use syn::parse::Parse;

use crate::diagnostics::{self, Errors};
use crate::docs;
use crate::params::{self, Param};
use crate::which::Macro;

/// The half of a handler macro that is its own: its options, how they are validated against the function, and
/// the glue expanded from the result.
pub(crate) trait HandlerMacro {
    const MACRO: Macro;
    /// The attribute's options as written.
    type Options: Parse;
    /// The options once validated: what `expand` reads.
    type Config;

    /// Checks the options against the validated function, pushing every problem onto `errors`; `None` when a
    /// configuration cannot be had (after pushing why).
    fn validate(options: Self::Options, item: &Function, errors: &mut Errors) -> Option<Self::Config>;

    /// The glue beside the function.
    fn expand(config: &Self::Config, item: &Function) -> TokenStream;
}

/// A handler function as written.
struct Written {
    /// The function without its parameters' doc comments and `#[mcp(...)]` options: what is emitted.
    function: ItemFn,
    params: Vec<params::Written>,
}

/// A validated handler function: what the glue is generated from.
pub(crate) struct Function {
    /// The function to emit unchanged (without our parameter attributes).
    pub function: ItemFn,
    /// The function's name without `r#`: the handler's name unless an option gives one.
    pub name: String,
    /// The function's doc comment: the description unless an option gives one.
    pub doc: Option<String>,
    pub params: Vec<Param>,
}

/// Runs the three phases of macro `M` on `#[attr] item`.
///
/// A mistake in the function (a parameter, the signature) leaves the function as written with the errors. A mistake
/// in the options alone still expands the handler, with the default options, beside the errors: the program's
/// `.tool::<name>()` finds its handler, so one mistake gives one message.
pub(crate) fn expand<M: HandlerMacro>(attr: TokenStream, item: TokenStream) -> TokenStream
where
    M::Options: Default,
{
    let mut errors = Errors::default();
    // Parse.
    let function: ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(e) => return diagnostics::with_item(item, e),
    };
    let written = parse(function, &mut errors);
    let mut option_errors = Errors::default();
    let options = match syn::parse2::<M::Options>(attr) {
        Ok(options) => Some(options),
        Err(e) => {
            option_errors.push(e);
            None
        }
    };
    // Validate.
    let item = validate(written, M::MACRO, &mut errors);
    if let Err(e) = errors.finish() {
        let function = &item.function;
        return diagnostics::with_item(quote!(#function), e);
    }
    let config = options.and_then(|options| M::validate(options, &item, &mut option_errors));
    let config = option_errors.finish().and_then(|()| {
        config.ok_or_else(|| {
            let message = format!("#[mcp::{}] could not read its options", M::MACRO.attr());
            syn::Error::new(proc_macro2::Span::call_site(), message)
        })
    });
    // Expand.
    match config {
        Ok(config) => M::expand(&config, &item),
        Err(e) => match M::validate(M::Options::default(), &item, &mut Errors::default()) {
            Some(fallback) => {
                let (expanded, errors) = (M::expand(&fallback, &item), e.to_compile_error());
                quote!(#expanded #errors)
            }
            None => {
                let function = &item.function;
                diagnostics::with_item(quote!(#function), e)
            }
        },
    }
}

fn parse(mut function: ItemFn, errors: &mut Errors) -> Written {
    let params = params::parse(&mut function.sig, errors);
    Written { function, params }
}

fn validate(written: Written, which: Macro, errors: &mut Errors) -> Function {
    let Written { function, params } = written;
    check_signature(&function.sig, which, errors);
    let params = params::validate(params, which, errors);
    let ident = function.sig.ident.to_string();
    let name = ident.strip_prefix("r#").unwrap_or(&ident).to_owned();
    let doc = docs::collect(&function.attrs);
    Function { function, name, doc, params }
}

/// What no handler function may be: generic, variadic, `const`, or returning `impl Trait` (the glue names the
/// return type to convert it, and its schema for tools).
fn check_signature(sig: &syn::Signature, which: Macro, errors: &mut Errors) {
    let functions = which.functions();
    let generic = match which {
        Macro::Tool => format!("{functions} cannot be generic: the schema needs concrete types"),
        _ => format!("{functions} cannot be generic: name concrete types"),
    };
    if !sig.generics.params.is_empty() {
        errors.push_spanned(&sig.generics, generic);
    } else if let Some(clause) = &sig.generics.where_clause {
        errors.push_spanned(clause, generic);
    }
    if let Some(v) = &sig.variadic {
        errors.push_spanned(v, format!("{functions} cannot be variadic"));
    }
    if let Some(c) = &sig.constness {
        errors.push_spanned(c, format!("{functions} cannot be `const`"));
    }
    if let syn::ReturnType::Type(_, ty) = &sig.output {
        if matches!(**ty, syn::Type::ImplTrait(_)) {
            errors.push_spanned(ty, format!("a {} cannot return `impl Trait`: name the return type", which.noun()));
        }
    }
}

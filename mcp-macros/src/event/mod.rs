//! `#[mcp::event]`: an event type of the Events extension (SEP-3415), declared on the function that serves it.
//!
//! Two shapes, as the SEP's server guidance has them:
//! - `fn name(arguments.., payload: &Payload) -> bool`: an emitted type; the function is its match rule, called
//!   with a subscription's arguments and each emitted payload;
//! - `async fn name(arguments.., check: Check) -> Result<Checked, Error>`: a checked type; the function reads the
//!   upstream from the client's cursor.
//!
//! Parsed in [`options`], validated here against the function, expanded in [`expand`].

mod expand;
mod options;

use proc_macro2::TokenStream;
use syn::Type;

use crate::diagnostics::Errors;
use crate::function::{self, Function, HandlerMacro};
use crate::params::Param;
use crate::which::Macro;

use options::Options;

pub(crate) fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    function::expand::<EventMacro>(attr, item)
}

/// The two shapes of an event function.
pub(crate) enum Kind {
    /// `fn(arguments.., &Payload) -> bool`: the payload type.
    Emitted { payload: Box<Type> },
    /// `async fn(arguments.., Check) -> Result<Checked, Error>`.
    Checked,
}

/// A validated event type's configuration.
pub(crate) struct Event {
    pub(crate) options: Options,
    /// The type's name: the `name` option or the function's.
    pub(crate) name: String,
    pub(crate) kind: Kind,
    /// How many of the function's parameters are the subscription's arguments (the first ones).
    pub(crate) arguments: usize,
}

const SHAPES: &str = "an event function is `fn name(arguments.., payload: &Payload) -> bool` (an emitted type, and \
                      its match rule) or `async fn name(arguments.., check: mcp::events::Check) -> Result<Checked, \
                      mcp::Error>` (a checked type)";

struct EventMacro;

/// Whether a type is spelled `Check` (`mcp::events::Check`, by value).
fn is_check(ty: &Type) -> bool {
    matches!(ty, Type::Path(p) if p.qself.is_none() && p.path.segments.last().is_some_and(|s| s.ident == "Check"))
}

fn kind(options: &Options, item: &Function, errors: &mut Errors) -> Option<(Kind, usize)> {
    let sig = &item.function.sig;
    let (last, rest) = match item.params.split_last() {
        Some(split) => split,
        None => {
            errors.push_spanned(&sig.ident, format!("{SHAPES}: this one takes no parameter"));
            return None;
        }
    };
    // A function of neither shape is not expanded (`None`): the errors here are the only ones it gets.
    let before = errors.len();
    for p in rest {
        if let Param::Injected { ty } = p {
            errors.push_spanned(
                ty,
                "an event function's arguments are owned (they make its inputSchema); the only reference is an \
                 emitted type's payload, last",
            );
        }
    }
    let kind = match last {
        Param::Argument { ty, .. } if is_check(ty) => {
            if sig.asyncness.is_none() {
                errors.push_spanned(&sig.ident, "a checked event's function reads its upstream: make it `async fn`");
            }
            Kind::Checked
        }
        Param::Injected { ty } => {
            if let Some(a) = &sig.asyncness {
                errors.push_spanned(a, "an emitted event's function is its match rule: a plain `fn` returning bool");
            }
            if let Some(payload) = &options.payload {
                errors.push_spanned(
                    payload,
                    "an emitted event's payload type is its function's last parameter (`payload: &Payload`); drop \
                     `payload = ...`",
                );
            }
            Kind::Emitted { payload: ty.clone() }
        }
        Param::Argument { ty, .. } | Param::Flattened { ty, .. } => {
            errors.push_spanned(ty, SHAPES);
            return None;
        }
    };
    (errors.len() == before).then_some((kind, rest.len()))
}

impl HandlerMacro for EventMacro {
    const MACRO: Macro = Macro::Event;
    type Options = Options;
    type Config = Event;

    fn validate(options: Options, item: &Function, errors: &mut Errors) -> Option<Event> {
        for mode in options.delivery.iter().flatten() {
            if !["poll", "push", "webhook"].contains(&mode.to_string().as_str()) {
                errors.push_spanned(mode, format!("`{mode}` is no delivery mode: write `poll`, `push` or `webhook`"));
            }
        }
        if options.delivery.as_ref().is_some_and(Vec::is_empty) {
            errors.push(syn::Error::new(proc_macro2::Span::call_site(), "`delivery = []` offers no mode: name one"));
        }
        let name = match &options.name {
            Some(lit) if lit.value().trim().is_empty() => {
                errors.push_spanned(lit, "an event type needs a name");
                lit.value()
            }
            Some(lit) => lit.value(),
            None => item.name.clone(),
        };
        let (kind, arguments) = kind(&options, item, errors)?;
        Some(Event { options, name, kind, arguments })
    }

    fn expand(event: &Event, item: &Function) -> TokenStream {
        expand::emit(event, item)
    }
}

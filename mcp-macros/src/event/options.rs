//! `#[mcp::event(...)]` parsed: its options as written.

use syn::parse::{Parse, ParseStream};
use syn::{Ident, LitStr, Token};

use crate::attr::{self, set, string_value};

mod kw {
    syn::custom_keyword!(name);
    syn::custom_keyword!(description);
    syn::custom_keyword!(payload);
    syn::custom_keyword!(delivery);
}

/// The options of `#[mcp::event(...)]` as written.
#[derive(Default)]
pub(crate) struct Options {
    pub(crate) name: Option<LitStr>,
    pub(crate) description: Option<LitStr>,
    /// `payload = Type`: a checked type's payload (an emitted type's is its function's reference parameter).
    pub(crate) payload: Option<syn::Type>,
    /// `delivery = [poll, push, webhook]`.
    pub(crate) delivery: Option<Vec<Ident>>,
    pub(crate) krate: Option<syn::Path>,
}

impl Parse for Options {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut o = Options::default();
        o.krate = attr::parse_options(input, |input, lookahead, span| {
            if lookahead.peek(kw::name) {
                input.parse::<kw::name>()?;
                set(&mut o.name, string_value(input)?, span, "name")?;
            } else if lookahead.peek(kw::description) {
                input.parse::<kw::description>()?;
                set(&mut o.description, string_value(input)?, span, "description")?;
            } else if lookahead.peek(kw::payload) {
                input.parse::<kw::payload>()?;
                input.parse::<Token![=]>()?;
                set(&mut o.payload, input.parse()?, span, "payload")?;
            } else if lookahead.peek(kw::delivery) {
                input.parse::<kw::delivery>()?;
                input.parse::<Token![=]>()?;
                let content;
                syn::bracketed!(content in input);
                let modes = content.parse_terminated(Ident::parse, Token![,])?;
                set(&mut o.delivery, modes.into_iter().collect(), span, "delivery")?;
            } else {
                return Ok(false);
            }
            Ok(true)
        })?;
        Ok(o)
    }
}

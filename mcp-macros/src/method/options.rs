//! `#[mcp::method(...)]` parsed: its options as written.

use syn::parse::{Parse, ParseStream};
use syn::LitStr;

use crate::attr::{self, set, string_value, Scopes};

mod kw {
    syn::custom_keyword!(name);
}

/// The options of `#[mcp::method(...)]` as written.
#[derive(Default)]
pub(crate) struct Options {
    pub(crate) name: Option<LitStr>,
    pub(crate) scopes: Option<Scopes>,
    pub(crate) krate: Option<syn::Path>,
}

impl Parse for Options {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut o = Options::default();
        o.krate = attr::parse_options(input, |input, lookahead, span| {
            if lookahead.peek(kw::name) {
                input.parse::<kw::name>()?;
                set(&mut o.name, string_value(input)?, span, "name")?;
                Ok(true)
            } else {
                Scopes::parse_key(input, lookahead, span, &mut o.scopes)
            }
        })?;
        Ok(o)
    }
}

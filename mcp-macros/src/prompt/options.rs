//! `#[mcp::prompt(...)]` parsed: its options as written.

use syn::parse::{Parse, ParseStream};
use syn::Ident;

use crate::attr::{self, set, Common};

mod kw {
    syn::custom_keyword!(complete);
}

/// The options of `#[mcp::prompt(...)]` as written: the shared ones and `complete(...)`.
#[derive(Default)]
pub(crate) struct Options {
    pub(crate) common: Common,
    pub(crate) completions: Option<Vec<(Ident, syn::Path)>>,
}

impl Parse for Options {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut completions = None;
        let common = Common::parse_with(input, |input, lookahead, span| {
            if !lookahead.peek(kw::complete) {
                return Ok(false);
            }
            input.parse::<kw::complete>()?;
            set(&mut completions, attr::completions(input)?, span, "complete")?;
            Ok(true)
        })?;
        Ok(Options { common, completions })
    }
}

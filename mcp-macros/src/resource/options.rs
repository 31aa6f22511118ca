//! `#[mcp::resource(...)]` parsed: its options as written.

use syn::parse::{Parse, ParseStream};
use syn::{Ident, LitFloat, LitInt, LitStr, Token};

use crate::attr::{self, path_value, set, string_value, Common};

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
pub(crate) struct Options {
    pub(crate) common: Common,
    pub(crate) uri: Option<LitStr>,
    pub(crate) mime_type: Option<LitStr>,
    pub(crate) size: Option<LitInt>,
    pub(crate) audience: Option<LitStr>,
    pub(crate) priority: Option<LitFloat>,
    pub(crate) completions: Option<Vec<(Ident, syn::Path)>>,
    pub(crate) list: Option<syn::Path>,
    pub(crate) ttl_ms: Option<LitInt>,
    pub(crate) cache_scope: Option<LitStr>,
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

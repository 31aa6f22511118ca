//! Pieces of attribute options shared by the macros: `key = "text"`, flags, `icon = "..."`, `complete(...)`.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::parse::ParseStream;
use syn::spanned::Spanned;
use syn::{Ident, LitStr, Token};

/// Stores `value` in `slot`, or fails with "duplicate option" at the key.
pub(crate) fn set<T>(slot: &mut Option<T>, value: T, key_span: Span, key: &str) -> syn::Result<()> {
    if slot.is_some() {
        return Err(syn::Error::new(key_span, format!("duplicate option `{key}`")));
    }
    *slot = Some(value);
    Ok(())
}

/// `= "string"`.
pub(crate) fn string_value(input: ParseStream) -> syn::Result<LitStr> {
    input.parse::<Token![=]>()?;
    input.parse()
}

/// `= path::to::function`.
pub(crate) fn path_value(input: ParseStream) -> syn::Result<syn::Path> {
    input.parse::<Token![=]>()?;
    input.parse()
}

/// The inside of `complete(arg = function, ...)`.
pub(crate) fn completions(input: ParseStream) -> syn::Result<Vec<(Ident, syn::Path)>> {
    let content;
    syn::parenthesized!(content in input);
    let mut out: Vec<(Ident, syn::Path)> = Vec::new();
    while !content.is_empty() {
        let name: Ident = content.parse()?;
        if out.iter().any(|(n, _)| *n == name) {
            return Err(syn::Error::new(name.span(), format!("`{name}` has two completion functions")));
        }
        let path = path_value(&content)?;
        out.push((name, path));
        if !content.is_empty() {
            content.parse::<Token![,]>()?;
        }
    }
    Ok(out)
}

/// `&[("arg", path as Completer), ...]`.
pub(crate) fn completions_tokens(mcp: &TokenStream, completions: &[(Ident, syn::Path)]) -> TokenStream {
    let entries = completions.iter().map(|(name, path)| {
        let name = name.to_string();
        let f = quote_spanned!(path.span()=> #mcp::__private::completer(#path));
        quote!((#name, #f))
    });
    quote!(&[#(#entries),*])
}

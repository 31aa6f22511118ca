//! A function as the attributes read it: its attributes, visibility and signature parsed, its body kept as the
//! tokens it was written in. No attribute looks inside a body (as tracing-attributes' `MaybeItemFn` does not), so a
//! long handler costs no parse, and its body reaches rustc exactly as written, errors and all.

use proc_macro2::{Delimiter, Group, TokenStream};
use quote::ToTokens;
use syn::parse::{Parse, ParseStream};
use syn::{Attribute, Signature, Visibility};

/// `#[attrs] vis fn name(params) -> ret { body }`, the body as tokens.
pub(crate) struct ItemFn {
    pub attrs: Vec<Attribute>,
    pub vis: Visibility,
    pub sig: Signature,
    /// The braced body, as written.
    pub block: Group,
}

impl Parse for ItemFn {
    fn parse(input: ParseStream<'_>) -> syn::Result<ItemFn> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis = input.parse()?;
        let sig = input.parse()?;
        let block: Group = match input.parse() {
            Ok(group) if matches!(Group::delimiter(&group), Delimiter::Brace) => group,
            _ => return Err(input.error("expected the function's body, `{ ... }`")),
        };
        if !input.is_empty() {
            return Err(input.error("unexpected tokens after the function"));
        }
        Ok(ItemFn { attrs, vis, sig, block })
    }
}

impl ToTokens for ItemFn {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        for attr in &self.attrs {
            attr.to_tokens(tokens);
        }
        self.vis.to_tokens(tokens);
        self.sig.to_tokens(tokens);
        self.block.to_tokens(tokens);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    #[test]
    fn the_body_is_kept_as_written_and_the_rest_is_read() {
        // A body syn could not parse as a block is still a body: rustc, not the attribute, says what is wrong.
        let item = quote! {
            /// Doc.
            pub async fn f(a: u32) -> u32 { a + + ; #![odd] }
        };
        let read: ItemFn = syn::parse2(item.clone()).unwrap();
        assert_eq!(read.sig.ident, "f");
        assert_eq!(read.attrs.len(), 1);
        assert_eq!(read.to_token_stream().to_string(), item.to_string());
        let no_body = syn::parse2::<ItemFn>(quote!(
            fn f();
        ))
        .err()
        .unwrap();
        assert_eq!(no_body.to_string(), "expected the function's body, `{ ... }`");
    }
}

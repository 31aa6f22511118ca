//! Collecting several errors and reporting them together.

use proc_macro2::TokenStream;

/// Errors gathered during validation, combined into one `syn::Error` at the end.
#[derive(Default)]
pub(crate) struct Errors(Option<syn::Error>);

impl Errors {
    pub(crate) fn push(&mut self, error: syn::Error) {
        match &mut self.0 {
            Some(e) => e.combine(error),
            None => self.0 = Some(error),
        }
    }

    pub(crate) fn push_spanned(&mut self, tokens: impl quote::ToTokens, message: impl std::fmt::Display) {
        self.push(syn::Error::new_spanned(tokens, message));
    }

    /// How many errors were pushed.
    pub(crate) fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |e| e.into_iter().count())
    }

    pub(crate) fn finish(self) -> Result<(), syn::Error> {
        match self.0 {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// On error, the user's item unchanged plus the errors, so one mistake gives one message and the rest of the
/// crate still sees the function.
pub(crate) fn with_item(item: TokenStream, error: syn::Error) -> TokenStream {
    let errors = error.to_compile_error();
    quote::quote!(#item #errors)
}

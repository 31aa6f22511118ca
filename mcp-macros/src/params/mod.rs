//! Classifying a handler's parameters: owned ones are arguments read from JSON, references are injected. Parsed in
//! [`parse`] (each parameter as written, with its doc comment and `#[mcp(...)]` options), classified and checked in
//! [`validate`], and read by the glue [`reader`] expands.

mod expand;
mod parse;
mod validate;

use proc_macro2::Ident;
use syn::{Pat, Type};

pub(crate) use expand::reader;
pub(crate) use parse::parse;
pub(crate) use validate::validate;

/// One parameter of a handler function.
pub(crate) enum Param {
    /// An owned parameter: a JSON property of the same name, maybe mirrored in an HTTP header
    /// (`#[mcp(header = "Region")]`: `Mcp-Param-Region` in the 2026 era).
    Argument { name: String, ty: Box<Type>, doc: Option<String>, header: Option<syn::LitStr> },
    /// An owned parameter marked `#[mcp(flatten)]`: a struct whose fields are top-level arguments, read from the
    /// whole argument object; its schema's properties join the input schema.
    Flattened { name: String, ty: Box<Type> },
    /// A reference parameter (`ctx: &Context`): injected by `FromContext`.
    Injected { ty: Box<Type> },
}

/// One parameter as written: `self`, or a pattern and a type, with the doc comment and the `#[mcp(...)]` options
/// that were on it.
pub(crate) enum Written {
    Receiver(syn::Receiver),
    Typed {
        pat: Box<Pat>,
        ty: Box<Type>,
        doc: Option<String>,
        /// `#[mcp(header = "Name")]`.
        header: Option<syn::LitStr>,
        /// The `flatten` of `#[mcp(flatten)]`, for its span.
        flatten: Option<Ident>,
    },
}

pub(super) fn unraw(ident: &Ident) -> String {
    let s = ident.to_string();
    s.strip_prefix("r#").map(str::to_owned).unwrap_or(s)
}

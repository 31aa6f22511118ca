//! A handler's parameters as written: each one's pattern and type, its doc comment and its `#[mcp(...)]` options.

use proc_macro2::Ident;
use syn::FnArg;

use super::Written;
use crate::diagnostics::Errors;
use crate::docs;

/// Reads the parameters of `sig`, taking their doc comments (rustc rejects docs on parameters) and `#[mcp(...)]`
/// options off, and reports the options it cannot read.
pub(crate) fn parse(sig: &mut syn::Signature, errors: &mut Errors) -> Vec<Written> {
    let mut written = Vec::new();
    for input in sig.inputs.iter_mut() {
        match input {
            FnArg::Receiver(receiver) => written.push(Written::Receiver(receiver.clone())),
            FnArg::Typed(typed) => {
                let doc = docs::collect(&typed.attrs);
                docs::strip(&mut typed.attrs);
                let ParamOptions { header, flatten } = parameter_options(&mut typed.attrs, errors);
                written.push(Written::Typed { pat: typed.pat.clone(), ty: typed.ty.clone(), doc, header, flatten });
            }
        }
    }
    written
}

/// The options of one parameter.
struct ParamOptions {
    header: Option<syn::LitStr>,
    /// The `flatten` keyword, for its span.
    flatten: Option<Ident>,
}

/// Reads and removes `#[mcp(...)]` on a parameter: `header = "Name"` and `flatten` (which macros take which is
/// checked in validation).
fn parameter_options(attrs: &mut Vec<syn::Attribute>, errors: &mut Errors) -> ParamOptions {
    let mut header = None;
    let mut flatten = None;
    for attr in attrs.iter().filter(|a| a.path().is_ident("mcp")) {
        let parsed = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("header") {
                header = Some(meta.value()?.parse()?);
                Ok(())
            } else if meta.path.is_ident("flatten") {
                let ident = meta.path.get_ident().cloned().expect("an identifier");
                if flatten.replace(ident).is_some() {
                    return Err(meta.error("`flatten` is given twice"));
                }
                Ok(())
            } else {
                Err(meta.error("unknown parameter option: expected `header = \"Name\"` or `flatten`"))
            }
        });
        if let Err(e) = parsed {
            errors.push(e);
        }
    }
    attrs.retain(|a| !a.path().is_ident("mcp"));
    ParamOptions { header, flatten }
}

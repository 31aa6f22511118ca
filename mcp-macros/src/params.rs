//! Classifying a handler's parameters: owned ones are arguments read from JSON, references are injected.

use proc_macro2::Ident;
use syn::{FnArg, Pat, Type};

use crate::diagnostics::Errors;
use crate::docs;

/// One parameter of a handler function.
pub(crate) enum Param {
    /// An owned parameter: a JSON property of the same name, maybe mirrored in an HTTP header
    /// (`#[mcp(header = "Region")]`: `Mcp-Param-Region` in the 2026 era).
    Argument { name: String, ty: Box<Type>, doc: Option<String>, header: Option<syn::LitStr> },
    /// A reference parameter (`ctx: &Context`): injected by `FromContext`.
    Injected { ty: Box<Type> },
}

/// Reads the parameters of `sig`, taking their doc comments off (rustc rejects docs on parameters), and reports every
/// parameter it cannot handle.
pub(crate) fn classify(sig: &mut syn::Signature, what: &str, errors: &mut Errors) -> Vec<Param> {
    let mut params = Vec::new();
    for input in sig.inputs.iter_mut() {
        let typed = match input {
            FnArg::Receiver(receiver) => {
                errors.push_spanned(
                    &*receiver,
                    format!("#[mcp::{what}] does not support methods yet: write a free function without `self`"),
                );
                continue;
            }
            FnArg::Typed(t) => t,
        };
        let doc = docs::collect(&typed.attrs);
        docs::strip(&mut typed.attrs);
        let header = parameter_options(&mut typed.attrs, what, errors);
        if let Type::Reference(r) = &*typed.ty {
            if r.mutability.is_some() {
                errors.push_spanned(r, "injected parameters are shared references: write `&T`, not `&mut T`");
                continue;
            }
            params.push(Param::Injected { ty: r.elem.clone() });
            continue;
        }
        let name = match &*typed.pat {
            Pat::Ident(p) if p.subpat.is_none() => unraw(&p.ident),
            other => {
                errors.push_spanned(
                    other,
                    "a tool argument needs a plain name, which becomes its JSON property: write `name: Type`",
                );
                continue;
            }
        };
        if matches!(&*typed.ty, Type::ImplTrait(_)) {
            errors.push_spanned(&typed.ty, "`impl Trait` arguments are not supported: name a concrete type");
            continue;
        }
        params.push(Param::Argument { name, ty: typed.ty.clone(), doc, header });
    }
    check_headers(&params, errors);
    params
}

/// Reads and removes `#[mcp(...)]` on a parameter: `header = "Name"` (tools only).
fn parameter_options(attrs: &mut Vec<syn::Attribute>, what: &str, errors: &mut Errors) -> Option<syn::LitStr> {
    let mut header = None;
    for attr in attrs.iter().filter(|a| a.path().is_ident("mcp")) {
        let parsed = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("header") {
                let name: syn::LitStr = meta.value()?.parse()?;
                if what != "tool" {
                    return Err(syn::Error::new(
                        name.span(),
                        "`header` mirrors a tool argument in an HTTP header; it is for #[mcp::tool] parameters only",
                    ));
                }
                if let Err(why) = check_header_name(&name.value()) {
                    return Err(syn::Error::new(name.span(), why));
                }
                header = Some(name);
                Ok(())
            } else {
                Err(meta.error("unknown parameter option: expected `header = \"Name\"`"))
            }
        });
        if let Err(e) = parsed {
            errors.push(e);
        }
    }
    attrs.retain(|a| !a.path().is_ident("mcp"));
    header
}

/// An `x-mcp-header` name: not empty, HTTP token characters only (RFC 9110 `tchar`).
fn check_header_name(name: &str) -> Result<(), String> {
    let tchar = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if name.is_empty() {
        return Err("the header name is empty: write `header = \"Name\"` (sent as `Mcp-Param-Name`)".into());
    }
    if let Some(bad) = name.chars().find(|c| !tchar(*c)) {
        return Err(format!(
            "the header name {name:?} holds {bad:?}: header names are letters, digits and !#$%&'*+-.^_`|~ only"
        ));
    }
    Ok(())
}

/// Two parameters mirrored in headers whose names differ only in case would share one header.
fn check_headers(params: &[Param], errors: &mut Errors) {
    let mut seen: Vec<String> = Vec::new();
    for p in params {
        if let Param::Argument { header: Some(h), .. } = p {
            let lower = h.value().to_ascii_lowercase();
            if seen.contains(&lower) {
                errors.push(syn::Error::new(
                    h.span(),
                    format!("another parameter is already mirrored in the header Mcp-Param-{}: header names must be unique, whatever their case", h.value()),
                ));
            } else {
                seen.push(lower);
            }
        }
    }
}

fn unraw(ident: &Ident) -> String {
    let s = ident.to_string();
    s.strip_prefix("r#").map(str::to_owned).unwrap_or(s)
}

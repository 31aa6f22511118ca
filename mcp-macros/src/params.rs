//! Classifying a handler's parameters: owned ones are arguments read from JSON, references are injected.

use proc_macro2::Ident;
use syn::{FnArg, Pat, Type};

use crate::diagnostics::Errors;
use crate::docs;

/// One parameter of a handler function.
pub(crate) enum Param {
    /// An owned parameter: a JSON property of the same name.
    Argument { name: String, ty: Box<Type>, doc: Option<String> },
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
        params.push(Param::Argument { name, ty: typed.ty.clone(), doc });
    }
    params
}

fn unraw(ident: &Ident) -> String {
    let s = ident.to_string();
    s.strip_prefix("r#").map(str::to_owned).unwrap_or(s)
}

//! A handler's parameters classified (arguments, flattened structs, injected references) and checked against the
//! macro they are under.

use proc_macro2::Ident;
use syn::{LitStr, Pat, Type, TypeReference};

use super::{unraw, Param, Written};
use crate::diagnostics::Errors;
use crate::which::Macro;

/// Classifies the parameters, and reports every one `which` cannot handle.
pub(crate) fn validate(written: Vec<Written>, which: Macro, errors: &mut Errors) -> Vec<Param> {
    let what = which.attr();
    let mut params = Vec::new();
    for param in written {
        let (pat, ty, doc, header, flatten) = match param {
            Written::Receiver(receiver) => {
                errors.push_spanned(
                    &receiver,
                    format!("#[mcp::{what}] does not support methods yet: write a free function without `self`"),
                );
                continue;
            }
            Written::Typed { pat, ty, doc, header, flatten } => (pat, ty, doc, header, flatten),
        };
        let header = header.and_then(|name| checked_header(name, which, errors));
        let flatten = flatten.and_then(|ident| checked_flatten(ident, which, errors));
        if let Type::Reference(r) = &*ty {
            params.extend(injected(r, flatten.as_ref(), errors));
            continue;
        }
        let name = match &*pat {
            Pat::Ident(p) if p.subpat.is_none() => unraw(&p.ident),
            other => {
                errors.push_spanned(
                    other,
                    "a tool argument needs a plain name, which becomes its JSON property: write `name: Type`",
                );
                continue;
            }
        };
        if matches!(&*ty, Type::ImplTrait(_)) {
            errors.push_spanned(&ty, "`impl Trait` arguments are not supported: name a concrete type");
            continue;
        }
        if flatten.is_some() {
            params.extend(flattened(name, ty, header.as_ref(), errors));
            continue;
        }
        params.push(Param::Argument { name, ty, doc, header });
    }
    check_headers(&params, errors);
    check_flattened(&params, errors);
    params
}

/// `header = "Name"` kept when `which` mirrors arguments in headers and the name is a header name; reported when not.
fn checked_header(name: LitStr, which: Macro, errors: &mut Errors) -> Option<LitStr> {
    if which != Macro::Tool {
        errors.push_spanned(
            &name,
            "`header` mirrors a tool argument in an HTTP header; it is for #[mcp::tool] parameters only",
        );
    } else if let Err(why) = check_header_name(&name.value()) {
        errors.push_spanned(&name, why);
    } else {
        return Some(name);
    }
    None
}

/// `flatten` kept when `which` takes JSON arguments; reported when its arguments are strings.
fn checked_flatten(ident: Ident, which: Macro, errors: &mut Errors) -> Option<Ident> {
    if !matches!(which, Macro::Tool | Macro::Method | Macro::Event) {
        let what = which.attr();
        errors.push_spanned(
            &ident,
            format!("`flatten` spreads a struct's fields into JSON arguments; #[mcp::{what}] arguments are strings, one per parameter"),
        );
        return None;
    }
    Some(ident)
}

/// A reference parameter, injected from the context: a shared reference, not flattened.
fn injected(r: &TypeReference, flatten: Option<&Ident>, errors: &mut Errors) -> Option<Param> {
    if let Some(flatten) = flatten {
        errors.push_spanned(
            flatten,
            "`flatten` spreads an owned struct's fields into the arguments; a reference parameter is injected from the context: write `name: Type`",
        );
        return None;
    }
    if r.mutability.is_some() {
        errors.push_spanned(r, "injected parameters are shared references: write `&T`, not `&mut T`");
        return None;
    }
    Some(Param::Injected { ty: r.elem.clone() })
}

/// A `#[mcp(flatten)]` parameter: not mirrored in a header, and of a type that may be a struct with named fields.
fn flattened(name: String, ty: Box<Type>, header: Option<&LitStr>, errors: &mut Errors) -> Option<Param> {
    if let Some(h) = header {
        errors.push_spanned(
            h,
            "a flattened parameter is a whole struct, not one property: mirror one of its fields in a header by making it a parameter of its own",
        );
        return None;
    }
    if let Some(why) = not_an_object(&ty) {
        errors.push_spanned(
            &ty,
            format!("`#[mcp(flatten)]` spreads a struct's named fields into the arguments, and {why}: flatten a struct with named fields (deriving `Deserialize` and `JsonSchema`), or drop `flatten` to make it one argument"),
        );
        return None;
    }
    Some(Param::Flattened { name, ty })
}

/// Why a type is known, from its spelling alone, not to be a struct with named fields: a primitive, a string, a
/// sequence, a map, an option, a tuple, an array. Other types (structs, enums, aliases) are checked when the server
/// is built, from their schema.
fn not_an_object(ty: &Type) -> Option<String> {
    match ty {
        Type::Tuple(t) if t.elems.is_empty() => Some("`()` has no fields".into()),
        Type::Tuple(_) => Some("a tuple's fields have no names".into()),
        Type::Array(_) | Type::Slice(_) => Some("an array is a list, not an object".into()),
        Type::Paren(p) => not_an_object(&p.elem),
        Type::Path(p) if p.qself.is_none() => {
            let last = p.path.segments.last()?;
            let name = last.ident.to_string();
            let why = match name.as_str() {
                "bool" | "char" | "str" | "String" | "i8" | "i16" | "i32" | "i64" | "i128" | "isize" | "u8" | "u16"
                | "u32" | "u64" | "u128" | "usize" | "f32" | "f64" | "PathBuf" | "Uuid" => "is a scalar",
                "Vec" | "VecDeque" | "HashSet" | "BTreeSet" | "LinkedList" => "is a sequence",
                "HashMap" | "BTreeMap" | "Map" => "is a map, with no fixed fields",
                "Option" => "may be absent as a whole",
                "Value" => "may be any JSON value",
                _ => return None,
            };
            Some(format!("`{name}` {why}"))
        }
        _ => None,
    }
}

/// Two parameters flattening the same type would give every field twice.
fn check_flattened(params: &[Param], errors: &mut Errors) {
    let mut seen: Vec<(String, &str)> = Vec::new();
    for p in params {
        if let Param::Flattened { name, ty } = p {
            let spelled = quote::ToTokens::to_token_stream(&**ty).to_string();
            if let Some((_, first)) = seen.iter().find(|(t, _)| *t == spelled) {
                errors.push_spanned(
                    ty,
                    format!("`{name}` and `{first}` both flatten `{spelled}`: their fields would be the same arguments twice"),
                );
            } else {
                seen.push((spelled, name));
            }
        }
    }
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

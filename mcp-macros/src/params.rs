//! Classifying a handler's parameters: owned ones are arguments read from JSON, references are injected.

use proc_macro2::{Ident, TokenStream};
use syn::spanned::Spanned;
use syn::{FnArg, Pat, Type};

use crate::diagnostics::Errors;
use crate::docs;
use crate::function::Macro;

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

/// Classifies the parameters, and reports every one `which` cannot handle.
pub(crate) fn validate(written: Vec<Written>, which: Macro, errors: &mut Errors) -> Vec<Param> {
    let what = which.attr();
    let mut params = Vec::new();
    for param in written {
        let (pat, ty, doc, mut header, mut flatten) = match param {
            Written::Receiver(receiver) => {
                errors.push_spanned(
                    &receiver,
                    format!("#[mcp::{what}] does not support methods yet: write a free function without `self`"),
                );
                continue;
            }
            Written::Typed { pat, ty, doc, header, flatten } => (pat, ty, doc, header, flatten),
        };
        if let Some(name) = header.take() {
            if which != Macro::Tool {
                errors.push_spanned(
                    &name,
                    "`header` mirrors a tool argument in an HTTP header; it is for #[mcp::tool] parameters only",
                );
            } else if let Err(why) = check_header_name(&name.value()) {
                errors.push_spanned(&name, why);
            } else {
                header = Some(name);
            }
        }
        if let Some(ident) = flatten.take() {
            if !matches!(which, Macro::Tool | Macro::Method) {
                errors.push_spanned(
                    &ident,
                    format!("`flatten` spreads a struct's fields into JSON arguments; #[mcp::{what}] arguments are strings, one per parameter"),
                );
            } else {
                flatten = Some(ident);
            }
        }
        if let Type::Reference(r) = &*ty {
            if let Some(flatten) = &flatten {
                errors.push_spanned(
                    flatten,
                    "`flatten` spreads an owned struct's fields into the arguments; a reference parameter is injected from the context: write `name: Type`",
                );
                continue;
            }
            if r.mutability.is_some() {
                errors.push_spanned(r, "injected parameters are shared references: write `&T`, not `&mut T`");
                continue;
            }
            params.push(Param::Injected { ty: r.elem.clone() });
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
            if let Some(h) = &header {
                errors.push_spanned(
                    h,
                    "a flattened parameter is a whole struct, not one property: mirror one of its fields in a header by making it a parameter of its own",
                );
                continue;
            }
            if let Some(why) = not_an_object(&ty) {
                errors.push_spanned(
                    &ty,
                    format!("`#[mcp(flatten)]` spreads a struct's named fields into the arguments, and {why}: flatten a struct with named fields (deriving `Deserialize` and `JsonSchema`), or drop `flatten` to make it one argument"),
                );
                continue;
            }
            params.push(Param::Flattened { name, ty });
            continue;
        }
        params.push(Param::Argument { name, ty, doc, header });
    }
    check_headers(&params, errors);
    check_flattened(&params, errors);
    params
}

/// The options of one parameter.
struct ParamOptions {
    header: Option<syn::LitStr>,
    /// The `flatten` keyword, for its span.
    flatten: Option<Ident>,
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

/// The glue that reads (and, for JSON, describes) an argument of type `ty`: `arg::<T>()` for a JSON argument,
/// `string_arg::<T>()` for a string one. A type spelled like an injected one (last segment `State` or `Context`)
/// taken by value goes through `Probe`, which resolves to the ordinary glue for any argument type and to an error
/// saying to take a reference for the runtime's own `State<T>` and `Context`: the type system decides, not the
/// spelling.
pub(crate) fn reader(private: &TokenStream, ty: &Type, strings: bool) -> TokenStream {
    let injected_name = match ty {
        Type::Path(p) if p.qself.is_none() => {
            p.path.segments.last().map(|last| &last.ident).filter(|name| *name == "State" || *name == "Context")
        }
        _ => None,
    };
    if let Some(name) = injected_name {
        // At the type's name, so the error at the method call points at the user's parameter.
        let glue = Ident::new(if strings { "string_arg" } else { "arg" }, name.span());
        quote::quote_spanned! {ty.span()=> {
            #[allow(unused_imports)]
            use #private::{ArgProbe as _, InjectedProbe as _};
            (&#private::Probe::<#ty>::NEW).#glue()
        }}
    } else {
        let glue = Ident::new(if strings { "string_arg" } else { "arg" }, ty.span());
        quote::quote_spanned!(ty.span()=> #private::#glue::<#ty>())
    }
}

fn unraw(ident: &Ident) -> String {
    let s = ident.to_string();
    s.strip_prefix("r#").map(str::to_owned).unwrap_or(s)
}

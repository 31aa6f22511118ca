//! Pieces of attribute options shared by the macros: the key loop and `crate = "..."`, `key = "text"`, flags,
//! `icon = "..."`, `scopes = [...]`, `tags = [...]`, `complete(...)`; and the checks on them, which run in validation.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::parse::{Lookahead1, ParseStream};
use syn::spanned::Spanned;
use syn::{Ident, LitBool, LitStr, Token};

use crate::diagnostics::Errors;

mod kw {
    syn::custom_keyword!(name);
    syn::custom_keyword!(title);
    syn::custom_keyword!(description);
    syn::custom_keyword!(icon);
    syn::custom_keyword!(scopes);
    syn::custom_keyword!(tags);
}

/// The options tools, prompts and resources share, as written: `name`, `title`, `description`, `icon`
/// (repeatable), `scopes = ["..", ..]`, `tags = ["..", ..]`, `crate`.
#[derive(Default)]
pub(crate) struct Common {
    pub name: Option<LitStr>,
    pub title: Option<LitStr>,
    pub description: Option<LitStr>,
    pub icons: Vec<LitStr>,
    pub scopes: Option<Scopes>,
    pub tags: Option<Tags>,
    pub krate: Option<syn::Path>,
}

/// `tags = ["admin", ...]`: labels that visibility rules read, as written.
pub(crate) struct Tags(pub Vec<LitStr>);

impl Tags {
    /// Every tag is a non-empty label, listed once.
    pub(crate) fn check(&self, errors: &mut Errors) {
        for (i, tag) in self.0.iter().enumerate() {
            let value = tag.value();
            if value.trim().is_empty() {
                errors.push_spanned(tag, "a tag is a non-empty label");
            } else if self.0[..i].iter().any(|t| t.value() == value) {
                errors.push_spanned(tag, format!("tag `{value}` is listed twice"));
            }
        }
    }
}

/// `scopes = ["books:write", ...]`: the OAuth scopes a handler needs, as written.
pub(crate) struct Scopes(pub Vec<LitStr>);

impl Scopes {
    /// Parses `scopes = [..]` when the next key is `scopes`; whether it was.
    pub(crate) fn parse_key(
        input: ParseStream,
        lookahead: &Lookahead1,
        span: Span,
        slot: &mut Option<Scopes>,
    ) -> syn::Result<bool> {
        if !lookahead.peek(kw::scopes) {
            return Ok(false);
        }
        input.parse::<kw::scopes>()?;
        input.parse::<Token![=]>()?;
        let content;
        syn::bracketed!(content in input);
        let list = syn::punctuated::Punctuated::<LitStr, Token![,]>::parse_terminated(&content)?;
        set(slot, Scopes(list.into_iter().collect()), span, "scopes")?;
        Ok(true)
    }

    /// Every scope is one OAuth scope token (RFC 6749 §3.3: printable ASCII without space, `"` or `\`), listed
    /// once.
    pub(crate) fn check(&self, errors: &mut Errors) {
        for (i, scope) in self.0.iter().enumerate() {
            let value = scope.value();
            if value.is_empty()
                || !value.bytes().all(|b| b == b'!' || (b'#'..=b'[').contains(&b) || (b']'..=b'~').contains(&b))
            {
                errors.push_spanned(
                    scope,
                    "a scope is one OAuth scope token: printable ASCII without spaces, `\"` or `\\`",
                );
            } else if self.0[..i].iter().any(|s| s.value() == value) {
                errors.push_spanned(scope, format!("scope `{value}` is listed twice"));
            }
        }
    }

    /// `.scopes(&[..])` for a definition's builder.
    pub(crate) fn builder(slot: &Option<Scopes>) -> TokenStream {
        match slot {
            Some(Scopes(list)) if !list.is_empty() => quote!(.scopes(&[#(#list),*])),
            _ => quote!(),
        }
    }
}

/// Parses `key = value, ...` to the end of an attribute: the macro's own keys through `key`, which returns whether
/// it recognised the next one, and `crate = "path"`, which every macro takes and only this function reads. An
/// unknown key is "expected one of ..." listing every key peeked for. Returns the `crate` path, if given.
pub(crate) fn parse_options(
    input: ParseStream,
    mut key: impl FnMut(ParseStream, &Lookahead1, Span) -> syn::Result<bool>,
) -> syn::Result<Option<syn::Path>> {
    let mut krate = None;
    while !input.is_empty() {
        let lookahead = input.lookahead1();
        let span = input.span();
        if key(input, &lookahead, span)? {
        } else if lookahead.peek(Token![crate]) {
            input.parse::<Token![crate]>()?;
            let path: LitStr = string_value(input)?;
            set(&mut krate, path.parse()?, span, "crate")?;
        } else {
            return Err(lookahead.error());
        }
        if !input.is_empty() {
            input.parse::<Token![,]>()?;
        }
    }
    Ok(krate)
}

impl Common {
    /// Parses `key = value, ...`: the shared keys here, the macro's own through `extra`, which returns whether it
    /// recognised the next key (see [`parse_options`]).
    pub(crate) fn parse_with(
        input: ParseStream,
        mut extra: impl FnMut(ParseStream, &Lookahead1, Span) -> syn::Result<bool>,
    ) -> syn::Result<Common> {
        let mut c = Common::default();
        c.krate = parse_options(input, |input, lookahead, span| {
            if lookahead.peek(kw::name) {
                input.parse::<kw::name>()?;
                set(&mut c.name, string_value(input)?, span, "name")?;
            } else if lookahead.peek(kw::title) {
                input.parse::<kw::title>()?;
                set(&mut c.title, string_value(input)?, span, "title")?;
            } else if lookahead.peek(kw::description) {
                input.parse::<kw::description>()?;
                set(&mut c.description, string_value(input)?, span, "description")?;
            } else if lookahead.peek(kw::icon) {
                input.parse::<kw::icon>()?;
                c.icons.push(string_value(input)?);
            } else if lookahead.peek(kw::tags) {
                input.parse::<kw::tags>()?;
                input.parse::<Token![=]>()?;
                let content;
                syn::bracketed!(content in input);
                let list = syn::punctuated::Punctuated::<LitStr, Token![,]>::parse_terminated(&content)?;
                set(&mut c.tags, Tags(list.into_iter().collect()), span, "tags")?;
            } else {
                return Ok(Scopes::parse_key(input, lookahead, span, &mut c.scopes)? || extra(input, lookahead, span)?);
            }
            Ok(true)
        })?;
        Ok(c)
    }

    /// The checks on the shared options: the scopes' spelling, the tags'.
    pub(crate) fn check(&self, errors: &mut Errors) {
        if let Some(scopes) = &self.scopes {
            scopes.check(errors);
        }
        if let Some(tags) = &self.tags {
            tags.check(errors);
        }
    }

    /// `.title(..)`, `.description(..)` and `.icons(..)` for a definition's builder; `description` falls back to
    /// the doc comment.
    pub(crate) fn builder(&self, doc: Option<String>) -> TokenStream {
        let mut out = quote!();
        if let Some(t) = &self.title {
            out.extend(quote!(.title(#t)));
        }
        if let Some(d) = self.description.as_ref().map(LitStr::value).or(doc) {
            out.extend(quote!(.description(#d)));
        }
        if !self.icons.is_empty() {
            let icons = &self.icons;
            out.extend(quote!(.icons(&[#(#icons),*])));
        }
        out.extend(Scopes::builder(&self.scopes));
        if let Some(Tags(tags)) = self.tags.as_ref().filter(|t| !t.0.is_empty()) {
            out.extend(quote!(.tags(&[#(#tags),*])));
        }
        out
    }
}

/// `key` alone (true) or `key = true|false`.
pub(crate) fn flag_value(input: ParseStream, key_span: Span) -> syn::Result<LitBool> {
    if input.peek(Token![=]) {
        input.parse::<Token![=]>()?;
        input.parse()
    } else {
        Ok(LitBool::new(true, key_span))
    }
}

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

/// The inside of `complete(arg = function, ...)`, as written.
pub(crate) fn completions(input: ParseStream) -> syn::Result<Vec<(Ident, syn::Path)>> {
    let content;
    syn::parenthesized!(content in input);
    let mut out: Vec<(Ident, syn::Path)> = Vec::new();
    while !content.is_empty() {
        let name: Ident = content.parse()?;
        let path = path_value(&content)?;
        out.push((name, path));
        if !content.is_empty() {
            content.parse::<Token![,]>()?;
        }
    }
    Ok(out)
}

/// Each completed argument is one of `arguments` and has one completion function; `missing` says what is missing
/// (`"the prompt has no argument"`).
pub(crate) fn check_completions(
    completions: &[(Ident, syn::Path)],
    arguments: &[&str],
    missing: &str,
    errors: &mut Errors,
) {
    for (i, (name, _)) in completions.iter().enumerate() {
        if completions[..i].iter().any(|(n, _)| n == name) {
            errors.push_spanned(name, format!("`{name}` has two completion functions"));
        } else if !arguments.iter().any(|a| name == a) {
            errors.push_spanned(name, format!("{missing} `{name}` to complete"));
        }
    }
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

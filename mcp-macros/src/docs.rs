//! Doc comments: reading them into descriptions, and taking them off parameters (where rustc does not allow them).

use syn::{Attribute, Expr, ExprLit, Lit, Meta};

/// The text of the `///` comments (`#[doc = "..."]`) among `attrs`, lines joined, common indentation and surrounding
/// blank lines removed. `None` when there are none.
pub(crate) fn collect(attrs: &[Attribute]) -> Option<String> {
    let lines: Vec<String> = attrs
        .iter()
        .filter_map(|attr| match &attr.meta {
            Meta::NameValue(nv) if nv.path.is_ident("doc") => match &nv.value {
                Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
        .flat_map(|s| s.lines().map(str::to_owned).collect::<Vec<_>>())
        .collect();
    let indent =
        lines.iter().filter(|l| !l.trim().is_empty()).map(|l| l.len() - l.trim_start().len()).min().unwrap_or(0);
    let text = lines
        .iter()
        .map(|l| if l.len() >= indent { &l[indent..] } else { l.trim_start() })
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n");
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

/// Removes `#[doc]` attributes (the parameter comments rustc would reject once we are done).
pub(crate) fn strip(attrs: &mut Vec<Attribute>) {
    attrs.retain(|a| !a.path().is_ident("doc"));
}

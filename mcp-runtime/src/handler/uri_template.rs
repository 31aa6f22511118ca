//! RFC 6570 URI templates, the subset resource templates use: `{var}` (one path segment or query value, no `/`,
//! `?`, `#` or `&`) and `{+var}` (reserved expansion: anything, slashes included). Matching a URI against a template
//! binds each variable to its (percent-decoded) text.

use std::fmt;

/// A parsed URI template.
///
/// ```
/// use mcp::handler::UriTemplate;
///
/// let notes = UriTemplate::parse("notes://{user}/{+path}").unwrap();
/// assert_eq!(notes.variables().collect::<Vec<_>>(), ["user", "path"]);
/// let bound = notes.matches("notes://ada/2024/march%20notes.md").unwrap();
/// assert_eq!(bound[0], ("user".to_owned(), "ada".to_owned()));
/// assert_eq!(bound[1], ("path".to_owned(), "2024/march notes.md".to_owned())); // `{+path}` takes slashes
/// assert_eq!(notes.matches("notes://a/b/c").unwrap()[0].1, "a"); // `{user}` does not
/// assert!(notes.matches("files://ada/x").is_none());
///
/// assert!(UriTemplate::parse("notes://{user}{id}").is_err()); // two variables in a row
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UriTemplate {
    source: String,
    parts: Vec<Part>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Literal(String),
    Var { name: String, reserved: bool },
}

/// Why a template could not be parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TemplateError(String);

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TemplateError {}

impl UriTemplate {
    /// Parses a template.
    pub fn parse(source: &str) -> Result<UriTemplate, TemplateError> {
        let mut parts = Vec::new();
        let mut rest = source;
        while let Some(open) = rest.find('{') {
            if rest[..open].contains('}') {
                return Err(TemplateError(format!("URI template `{source}`: `}}` without `{{`")));
            }
            if open > 0 {
                parts.push(Part::Literal(rest[..open].to_owned()));
            }
            let close = rest[open..]
                .find('}')
                .map(|c| open + c)
                .ok_or_else(|| TemplateError(format!("URI template `{source}`: `{{` is never closed")))?;
            let mut expr = &rest[open + 1..close];
            let reserved = expr.starts_with('+');
            if reserved {
                expr = &expr[1..];
            }
            if expr.is_empty() || !expr.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(TemplateError(format!(
                    "URI template `{source}`: `{{{}}}` is not supported; write `{{name}}` or `{{+name}}` with a name of letters, digits and `_`",
                    &rest[open + 1..close]
                )));
            }
            if matches!(parts.last(), Some(Part::Var { .. })) {
                return Err(TemplateError(format!(
                    "URI template `{source}`: two variables in a row cannot be told apart; put text between them"
                )));
            }
            if parts.iter().any(|p| matches!(p, Part::Var { name, .. } if name == expr)) {
                return Err(TemplateError(format!("URI template `{source}`: `{expr}` appears twice")));
            }
            parts.push(Part::Var { name: expr.to_owned(), reserved });
            rest = &rest[close + 1..];
        }
        if rest.contains('}') {
            return Err(TemplateError(format!("URI template `{source}`: `}}` without `{{`")));
        }
        if !rest.is_empty() {
            parts.push(Part::Literal(rest.to_owned()));
        }
        Ok(UriTemplate { source: source.to_owned(), parts })
    }

    /// The template as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// The variables' names, in order.
    pub fn variables(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::Var { name, .. } => Some(name.as_str()),
            Part::Literal(_) => None,
        })
    }

    /// Binds the variables if `uri` matches the template.
    pub fn matches(&self, uri: &str) -> Option<Vec<(String, String)>> {
        let mut bound = Vec::new();
        let mut rest = uri;
        let mut parts = self.parts.iter().peekable();
        while let Some(part) = parts.next() {
            match part {
                Part::Literal(lit) => rest = rest.strip_prefix(lit.as_str())?,
                Part::Var { name, reserved } => {
                    // The value runs to the next literal (the first occurrence that leaves a match possible is
                    // the first one: variables never follow each other), or to the end.
                    let end = match parts.peek() {
                        Some(Part::Literal(next)) => rest.find(next.as_str())?,
                        _ => rest.len(),
                    };
                    let value = &rest[..end];
                    let forbidden: &[char] = if *reserved { &[] } else { &['/', '?', '#', '&'] };
                    if value.is_empty() || value.contains(forbidden) {
                        return None;
                    }
                    bound.push((name.clone(), percent_decode(value)));
                    rest = &rest[end..];
                }
            }
        }
        rest.is_empty().then_some(bound)
    }
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    let hex = |b: u8| char::from(b).to_digit(16);
    while i < bytes.len() {
        // Bytes, not `&str` slices: the two after a `%` may be part of a multi-byte character.
        if let [b'%', high, low, ..] = bytes[i..] {
            if let (Some(high), Some(low)) = (hex(high), hex(low)) {
                out.push((high << 4 | low) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| s.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_segments_and_reserved_expansion() {
        let t = UriTemplate::parse("users://{id}/profile").unwrap();
        assert_eq!(t.variables().collect::<Vec<_>>(), ["id"]);
        assert_eq!(t.matches("users://42/profile"), Some(vec![("id".into(), "42".into())]));
        assert_eq!(t.matches("users://4/2/profile"), None);
        assert_eq!(t.matches("users:///profile"), None);
        assert_eq!(t.matches("users://42/profile/x"), None);
        let f = UriTemplate::parse("file:///{+path}").unwrap();
        assert_eq!(f.matches("file:///a/b%20c.txt"), Some(vec![("path".into(), "a/b c.txt".into())]));
        let two = UriTemplate::parse("db://{table}/{row}").unwrap();
        assert_eq!(
            two.matches("db://books/7"),
            Some(vec![("table".into(), "books".into()), ("row".into(), "7".into())])
        );
    }

    #[test]
    fn percent_decoding_reads_two_hex_digits_and_never_splits_a_character() {
        let t = UriTemplate::parse("test://template/{id}/data").unwrap();
        let id = |uri: &str| t.matches(uri).map(|mut bound| bound.remove(0).1);
        // Found by fuzzing: a `%` before a multi-byte character panicked (slicing inside it), which ended a stdio
        // server on one `resources/read`.
        assert_eq!(id("test://template/%aé/data").as_deref(), Some("%aé"));
        assert_eq!(id("test://template/%é1/data").as_deref(), Some("%é1"));
        assert_eq!(id("test://template/x%a/data").as_deref(), Some("x%a"));
        // A sign is not a hex digit (`u8::from_str_radix` takes one).
        assert_eq!(id("test://template/%+1/data").as_deref(), Some("%+1"));
        assert_eq!(id("test://template/%C3%a9%2F%25/data").as_deref(), Some("é/%"));
    }

    #[test]
    fn rejects_what_it_cannot_match() {
        assert!(UriTemplate::parse("a://{x").is_err());
        assert!(UriTemplate::parse("a://{x}{y}").is_err());
        assert!(UriTemplate::parse("a://{x,y}").is_err());
        assert!(UriTemplate::parse("a://{?q}").is_err());
        assert!(UriTemplate::parse("a://{x}/{x}").is_err());
        assert!(UriTemplate::parse("a://x}").is_err());
        assert!(UriTemplate::parse("a://x}/{id}").is_err(), "a stray `}}` before a variable too");
    }
}

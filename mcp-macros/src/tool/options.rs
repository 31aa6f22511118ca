//! `#[mcp::tool(...)]` parsed: its options as written.

use syn::parse::{Parse, ParseStream};
use syn::{LitBool, LitInt, LitStr, Token};

use crate::attr::{flag_value, set, string_value, Common};

mod kw {
    syn::custom_keyword!(read_only);
    syn::custom_keyword!(destructive);
    syn::custom_keyword!(idempotent);
    syn::custom_keyword!(open_world);
    syn::custom_keyword!(task);
    syn::custom_keyword!(defer_task);
    syn::custom_keyword!(task_ttl_ms);
    syn::custom_keyword!(task_poll_ms);
}

/// The options of `#[mcp::tool(...)]` as written: the shared ones, the behaviour hints, how it runs as a task.
#[derive(Default)]
pub(crate) struct Options {
    pub(crate) common: Common,
    pub(crate) read_only: Option<LitBool>,
    pub(crate) destructive: Option<LitBool>,
    pub(crate) idempotent: Option<LitBool>,
    pub(crate) open_world: Option<LitBool>,
    /// `task = "optional" | "required" | "forbidden"`.
    pub(crate) task: Option<LitStr>,
    pub(crate) defer_task: Option<LitBool>,
    pub(crate) task_ttl_ms: Option<LitInt>,
    pub(crate) task_poll_ms: Option<LitInt>,
}

impl Parse for Options {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut o = Options::default();
        o.common = Common::parse_with(input, |input, lookahead, span| {
            let (slot, key) = if lookahead.peek(kw::read_only) {
                input.parse::<kw::read_only>()?;
                (&mut o.read_only, "read_only")
            } else if lookahead.peek(kw::destructive) {
                input.parse::<kw::destructive>()?;
                (&mut o.destructive, "destructive")
            } else if lookahead.peek(kw::idempotent) {
                input.parse::<kw::idempotent>()?;
                (&mut o.idempotent, "idempotent")
            } else if lookahead.peek(kw::open_world) {
                input.parse::<kw::open_world>()?;
                (&mut o.open_world, "open_world")
            } else if lookahead.peek(kw::task) {
                input.parse::<kw::task>()?;
                set(&mut o.task, string_value(input)?, span, "task")?;
                return Ok(true);
            } else if lookahead.peek(kw::task_ttl_ms) {
                input.parse::<kw::task_ttl_ms>()?;
                input.parse::<Token![=]>()?;
                set(&mut o.task_ttl_ms, input.parse()?, span, "task_ttl_ms")?;
                return Ok(true);
            } else if lookahead.peek(kw::task_poll_ms) {
                input.parse::<kw::task_poll_ms>()?;
                input.parse::<Token![=]>()?;
                set(&mut o.task_poll_ms, input.parse()?, span, "task_poll_ms")?;
                return Ok(true);
            } else if lookahead.peek(kw::defer_task) {
                input.parse::<kw::defer_task>()?;
                (&mut o.defer_task, "defer_task")
            } else {
                return Ok(false);
            };
            set(slot, flag_value(input, span)?, span, key)?;
            Ok(true)
        })?;
        Ok(o)
    }
}

//! `#[mcp::tool]`: parsed in [`options`] (the options as written), validated here against the function, expanded in
//! [`expand`] (the definition and glue).

mod expand;
mod options;

use proc_macro2::{Span, TokenStream};
use syn::LitInt;

use crate::diagnostics::Errors;
use crate::function::{self, Function, HandlerMacro};
use crate::which::Macro;
use options::Options;

/// How a tool runs as a task (`task = "..."`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum TaskSupport {
    Optional,
    Required,
    Forbidden,
}

/// A validated tool's configuration.
pub(crate) struct Tool {
    pub(crate) options: Options,
    /// The tool's name: the `name` option or the function's.
    pub(crate) name: String,
    pub(crate) task: Option<TaskSupport>,
}

/// The tool name rule of MCP 2025-11-25: 1 to 128 characters of `A-Z a-z 0-9 _ - .` (the runtime's
/// `check_tool_name` applies the same rule to every definition a server is given).
fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > 128 {
        return Err(format!("tool name `{name}` must be 1 to 128 characters long"));
    }
    if let Some(c) = name.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))) {
        return Err(format!("tool name `{name}` has `{c}`: use only letters, digits, `_`, `-` and `.`"));
    }
    Ok(())
}

/// `task_ttl_ms` and `task_poll_ms` are numbers of milliseconds above 0.
fn check_milliseconds(value: &Option<LitInt>, key: &str, errors: &mut Errors) {
    if let Some(value) = value {
        if value.base10_parse::<u64>().map_or(true, |v| v == 0) {
            errors.push_spanned(value, format!("`{key}` is a number of milliseconds above 0"));
        }
    }
}

pub(crate) fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    function::expand::<ToolMacro>(attr, item)
}

struct ToolMacro;

impl HandlerMacro for ToolMacro {
    const MACRO: Macro = Macro::Tool;
    type Options = Options;
    type Config = Tool;

    fn validate(options: Options, item: &Function, errors: &mut Errors) -> Option<Tool> {
        options.common.check(errors);
        let name = match &options.common.name {
            Some(lit) => {
                if let Err(e) = check_name(&lit.value()) {
                    errors.push_spanned(lit, e);
                }
                lit.value()
            }
            None => {
                if let Err(e) = check_name(&item.name) {
                    errors.push_spanned(&item.function.sig.ident, format!("{e}; or name it with `name = \"...\"`"));
                }
                item.name.clone()
            }
        };
        let task = options.task.as_ref().and_then(|lit| match lit.value().as_str() {
            "optional" => Some(TaskSupport::Optional),
            "required" => Some(TaskSupport::Required),
            "forbidden" => Some(TaskSupport::Forbidden),
            _ => {
                errors.push_spanned(
                    lit,
                    "`task` is \"optional\" (a task when the client asks for one), \"required\" (always a task) or \"forbidden\"",
                );
                None
            }
        });
        check_milliseconds(&options.task_ttl_ms, "task_ttl_ms", errors);
        check_milliseconds(&options.task_poll_ms, "task_poll_ms", errors);
        // An unknown `task` value is reported above; the companions are not reported against it too.
        let runs_as_task = options.task.is_some() && task != Some(TaskSupport::Forbidden);
        if !runs_as_task {
            let companions: [(&str, Option<Span>); 3] = [
                ("defer_task", options.defer_task.as_ref().map(|v| v.span())),
                ("task_ttl_ms", options.task_ttl_ms.as_ref().map(|v| v.span())),
                ("task_poll_ms", options.task_poll_ms.as_ref().map(|v| v.span())),
            ];
            for (key, span) in companions {
                if let Some(span) = span {
                    errors.push(syn::Error::new(
                        span,
                        format!("`{key}` applies to a tool that runs as a task: add `task = \"optional\"` or `task = \"required\"`"),
                    ));
                }
            }
        }
        Some(Tool { options, name, task })
    }

    fn expand(tool: &Tool, item: &Function) -> TokenStream {
        expand::emit(tool, item)
    }
}

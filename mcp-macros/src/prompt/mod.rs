//! `#[mcp::prompt]`: a function whose parameters are the prompt's arguments and whose return value its messages.
//!
//! Parsed in [`options`] (the options as written), validated here against the function, expanded in [`expand`].

mod expand;
mod options;

use proc_macro2::TokenStream;
use syn::LitStr;

use crate::attr;
use crate::diagnostics::Errors;
use crate::function::{self, Function, HandlerMacro};
use crate::params::Param;
use crate::which::Macro;

use options::Options;

pub(crate) fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    function::expand::<PromptMacro>(attr, item)
}

/// A validated prompt's configuration.
pub(crate) struct Prompt {
    pub(crate) options: Options,
    /// The prompt's name: the `name` option or the function's.
    pub(crate) name: String,
}

struct PromptMacro;

impl HandlerMacro for PromptMacro {
    const MACRO: Macro = Macro::Prompt;
    type Options = Options;
    type Config = Prompt;

    fn validate(options: Options, item: &Function, errors: &mut Errors) -> Option<Prompt> {
        options.common.check(errors);
        let arguments: Vec<&str> = item
            .params
            .iter()
            .filter_map(|p| match p {
                Param::Argument { name, .. } => Some(name.as_str()),
                Param::Injected { .. } | Param::Flattened { .. } => None,
            })
            .collect();
        if let Some(completions) = &options.completions {
            attr::check_completions(completions, &arguments, "the prompt has no argument", errors);
        }
        let name = options.common.name.as_ref().map_or_else(|| item.name.clone(), LitStr::value);
        Some(Prompt { options, name })
    }

    fn expand(prompt: &Prompt, item: &Function) -> TokenStream {
        expand::emit(prompt, item)
    }
}

//! Which handler macro is running: what the phases (the function's checks, the parameters', the glue) ask to
//! differ by. Below every other module of the crate, so that they all name it from one place.

/// Which handler macro is running, for the checks and messages that differ between them.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Macro {
    Tool,
    Prompt,
    Resource,
    Method,
    Event,
}

impl Macro {
    /// The attribute's name: `tool` in `#[mcp::tool]`.
    pub(crate) fn attr(self) -> &'static str {
        match self {
            Macro::Tool => "tool",
            Macro::Prompt => "prompt",
            Macro::Resource => "resource",
            Macro::Method => "method",
            Macro::Event => "event",
        }
    }

    /// What messages call one handler of this kind.
    pub(crate) fn noun(self) -> &'static str {
        match self {
            Macro::Tool => "tool",
            Macro::Prompt => "prompt",
            Macro::Resource => "resource",
            Macro::Method => "custom method",
            Macro::Event => "event type",
        }
    }

    /// What messages call the functions this macro goes on.
    pub(crate) fn functions(self) -> &'static str {
        match self {
            Macro::Tool => "tool functions",
            Macro::Prompt => "prompt functions",
            Macro::Resource => "resource functions",
            Macro::Method => "custom methods",
            Macro::Event => "event functions",
        }
    }
}

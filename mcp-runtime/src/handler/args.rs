//! The bounds generated code puts on argument types. Each is a local trait with a blanket impl over the foreign one
//! (`schemars::JsonSchema`, `serde::de::DeserializeOwned`), so a type that lacks it gets a message that says what to
//! derive, at the user's own parameter, instead of a bound on a private path.

use std::marker::PhantomData;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use crate::__private::{ArgGlue, StringArgGlue};
use crate::context::FromContext;

/// An argument type with a JSON Schema (for the tool's input schema).
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no JSON Schema, so it cannot be an MCP argument",
    label = "the type of an argument must implement `JsonSchema`",
    note = "derive it: `#[derive(mcp::schemars::JsonSchema)]` with `#[schemars(crate = \"mcp::schemars\")]` on the type (or `#[derive(schemars::JsonSchema)]` with schemars as a dependency of your own)"
)]
pub trait ArgSchema: JsonSchema {}

impl<T: JsonSchema + ?Sized> ArgSchema for T {}

/// An argument type that can be read from the request.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be read from the request's arguments, so it cannot be an MCP argument",
    label = "the type of an argument must implement `Deserialize`",
    note = "derive it: `#[derive(mcp::serde::Deserialize)]` with `#[serde(crate = \"mcp::serde\")]` on the type (or `#[derive(serde::Deserialize)]` with serde as a dependency of your own)"
)]
pub trait ArgValue: DeserializeOwned {}

impl<T: DeserializeOwned> ArgValue for T {}

/// Reaches the glue of an argument whose type is spelled like an injected one (`State<T>`, `Context`) but taken by
/// value. `(&Probe::<T>::NEW).arg()` resolves to [`InjectedProbe`] when `T` is injected (the runtime's own
/// `State<T>` or `Context`), whose methods ask for [`TakenByValue`], which nothing implements: one error, saying to
/// take a reference. Any other `T` (a type of the user's that merely has that name) resolves, one autoref later, to
/// [`ArgProbe`]: the ordinary argument bounds and their messages.
pub struct Probe<T>(PhantomData<T>);

impl<T> Probe<T> {
    /// The probe for `T`.
    pub const NEW: Probe<T> = Probe(PhantomData);
}

/// Never implemented: the bound that refuses an injected type taken by value.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is injected by reference, not read from the arguments",
    label = "write `&` before the type: a reference parameter is injected",
    note = "`mcp::Context` and `mcp::State<T>` are handed to a handler as `ctx: &Context` and `name: &State<T>`; a parameter taken by value is an argument, read from the request"
)]
pub trait TakenByValue {}

/// The injected side of [`Probe`]: refused at compile time.
pub trait InjectedProbe<T> {
    /// The glue of a JSON argument.
    fn arg(&self) -> ArgGlue<T>
    where
        T: TakenByValue;
    /// The glue of a string argument.
    fn string_arg(&self) -> StringArgGlue<T>
    where
        T: TakenByValue;
}

impl<T: FromContext> InjectedProbe<T> for Probe<T> {
    fn arg(&self) -> ArgGlue<T>
    where
        T: TakenByValue,
    {
        unreachable!("nothing implements TakenByValue")
    }

    fn string_arg(&self) -> StringArgGlue<T>
    where
        T: TakenByValue,
    {
        unreachable!("nothing implements TakenByValue")
    }
}

/// The argument side of [`Probe`]: the ordinary glue.
pub trait ArgProbe<T> {
    /// The glue of a JSON argument.
    fn arg(&self) -> ArgGlue<T>
    where
        T: ArgSchema + ArgValue;
    /// The glue of a string argument.
    fn string_arg(&self) -> StringArgGlue<T>
    where
        T: ArgValue;
}

impl<T> ArgProbe<T> for &Probe<T> {
    fn arg(&self) -> ArgGlue<T>
    where
        T: ArgSchema + ArgValue,
    {
        crate::__private::arg::<T>()
    }

    fn string_arg(&self) -> StringArgGlue<T>
    where
        T: ArgValue,
    {
        crate::__private::string_arg::<T>()
    }
}

//! Shared application state: values the server is built with, handed to handlers as `&State<T>`.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::ops::Deref;

use crate::context::{Context, FromContext};
use crate::wire::error::Error;

/// A value of type `T` that the server was built with, borrowed by a handler that declares `name: &State<T>`.
///
/// Give the server its state with [`ServerBuilder::state`](crate::ServerBuilder::state); a tool, or a custom method,
/// that declares a `&State<T>` parameter gets it, from an async or a plain function alike. A handler that asks for a
/// type the server was not given is reported when the server is built, naming the handler and the type, before any
/// request is served.
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use mcp::State;
///
/// #[derive(Default)]
/// struct Visits(AtomicU64);
///
/// /// Count a visit.
/// #[mcp::tool]
/// fn visit(visits: &State<Visits>) -> String {
///     (visits.0.fetch_add(1, Ordering::Relaxed) + 1).to_string()
/// }
///
/// let server = mcp::Server::builder().state(Visits::default()).tool::<visit>().build().unwrap();
/// # let _ = server;
/// assert!(mcp::Server::builder().tool::<visit>().build().is_err()); // no `Visits`: an error at build time
/// ```
///
/// State is shared by every session and every request, so it must be `Send + Sync`: put what changes behind a
/// `Mutex`, an atomic, or a pool that does its own locking.
#[repr(transparent)]
pub struct State<T>(T);

impl<T> Deref for State<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: fmt::Debug> fmt::Debug for State<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl<T: Send + Sync + 'static> FromContext for State<T> {
    fn from_context(ctx: &Context) -> Result<&Self, Error> {
        ctx.server_state()
            .get::<T>()
            .ok_or_else(|| Error::internal(format!("the server has no state of type `{}`", std::any::type_name::<T>())))
    }

    fn requirement() -> Option<Requirement> {
        Some(Requirement { type_id: TypeId::of::<T>(), type_name: std::any::type_name::<T>() })
    }
}

/// Something a handler needs from the server before it can run: today, a state type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Requirement {
    pub(crate) type_id: TypeId,
    /// The type's name, for error messages.
    pub type_name: &'static str,
}

/// The state values of a server, by type.
#[derive(Default)]
pub(crate) struct StateMap {
    values: HashMap<TypeId, (Box<dyn Any + Send + Sync>, &'static str)>,
}

impl StateMap {
    /// Adds a value; `Err` with the type's name if one of that type is there already.
    pub(crate) fn insert<T: Send + Sync + 'static>(&mut self, value: T) -> Result<(), &'static str> {
        let name = std::any::type_name::<T>();
        if self.values.contains_key(&TypeId::of::<T>()) {
            return Err(name);
        }
        self.values.insert(TypeId::of::<T>(), (Box::new(State(value)), name));
        Ok(())
    }

    pub(crate) fn get<T: 'static>(&self) -> Option<&State<T>> {
        self.values.get(&TypeId::of::<T>()).and_then(|(v, _)| v.downcast_ref::<State<T>>())
    }

    pub(crate) fn contains(&self, requirement: &Requirement) -> bool {
        self.values.contains_key(&requirement.type_id)
    }

    pub(crate) fn type_names(&self) -> Vec<&'static str> {
        let mut names: Vec<_> = self.values.values().map(|(_, n)| *n).collect();
        names.sort_unstable();
        names
    }
}

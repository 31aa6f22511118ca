//! Stores: what the server keeps that may live outside the process, behind traits with an in-memory default — the
//! task store ([`TaskStore`], [`MemoryTaskStore`]) and the 2025 session store ([`SessionStore`],
//! [`MemorySessionStore`]), and the log of 2025 sessions' SSE events ([`EventLog`], [`MemoryEventLog`]). They know
//! records, not eras or transports. [`mcp::redis`](crate::redis) implements each on Redis, for several instances.
//!
//! With the `http` feature, also what one instance keeps of each 2025 session's SSE streams so that a client resumes
//! one with `Last-Event-ID` ([`EventStore`], made per session by an [`EventStoreFactory`]; in memory by default,
//! [`MemoryEventStore`], bounded per stream and per session), set with
//! [`HttpOptions::event_store`](crate::HttpOptions::event_store).

pub(crate) mod events;
pub(crate) mod session;
#[cfg(feature = "http")]
pub(crate) mod streams;
pub(crate) mod task;

pub use events::{EventLog, LogSlice, MemoryEventLog};
pub use session::{MemorySessionStore, SessionRecord, SessionStore};
#[cfg(feature = "http")]
pub use streams::{EventStore, EventStoreFactory, MemoryEventStore, MemoryEventStoreFactory};
pub use task::{ClientTasks, MemoryTaskStore, StoreError, TaskPage, TaskRecord, TaskStatus, TaskStore};

//! Stores: what the server keeps that may live outside the process, behind traits with an in-memory default — the
//! task store ([`TaskStore`], [`MemoryTaskStore`]) and the 2025 session store ([`SessionStore`],
//! [`MemorySessionStore`]), and the log of 2025 sessions' SSE events ([`EventLog`], [`MemoryEventLog`]). They know
//! records, not eras or transports. [`mcp::redis`](crate::redis) implements each on Redis, for several instances.

pub(crate) mod events;
pub(crate) mod session;
pub(crate) mod task;

pub use events::{EventLog, LogSlice, MemoryEventLog};
pub use session::{MemorySessionStore, SessionRecord, SessionStore};
pub use task::{ClientTasks, MemoryTaskStore, StoreError, TaskPage, TaskRecord, TaskStatus, TaskStore};

//! Stores: what the server keeps that may live outside the process, behind traits with an in-memory default — the
//! task store ([`task::TaskStore`], [`task::MemoryTaskStore`]) and the 2025 session store
//! ([`session::SessionStore`], [`session::MemorySessionStore`]), and the log of 2025 sessions' SSE events
//! ([`events::EventLog`], [`events::MemoryEventLog`]). They know records, not eras or transports.

pub(crate) mod events;
pub(crate) mod session;
pub(crate) mod task;

//! Stores: what the server keeps that may live outside the process, behind traits with an in-memory default — the
//! task store ([`task::TaskStore`], [`task::MemoryTaskStore`]). They know records, not eras or transports.

pub(crate) mod task;

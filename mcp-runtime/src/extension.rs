//! Protocol extensions: an [`Extension`] is what a protocol extension adds to a server (its [`Declaration`] in each
//! era, its methods and notifications, its state, its hooks), given to
//! [`ServerBuilder::extension`](crate::ServerBuilder::extension). The guide's
//! [Extensions chapter](crate::guide::extensions) shows one whole; Tasks, Events and Skills are built on it.

pub use crate::builder::extension::{Declaration, Extension, NotificationDef};

//! Boxed futures: what handlers, stores and hooks return.

use std::future::Future;
use std::pin::Pin;

/// A boxed, `Send` future: what handlers return (and task stores and hooks).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

//! Locks that survive a panic. A handler that panics while another thread holds one of the runtime's locks must
//! not take the server down with it: every lock is taken through [`Unpoisoned`], which ignores the poison (the
//! runtime keeps its invariants under a lock without unwinding in the middle of them).

use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Taking a [`Mutex`] whether or not a panic poisoned it.
pub(crate) trait Unpoisoned<T: ?Sized> {
    /// The lock's guard, poisoned or not.
    fn locked(&self) -> MutexGuard<'_, T>;
}

impl<T: ?Sized> Unpoisoned<T> for Mutex<T> {
    fn locked(&self) -> MutexGuard<'_, T> {
        self.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Reading and writing a [`RwLock`] whether or not a panic poisoned it.
pub(crate) trait UnpoisonedRw<T: ?Sized> {
    /// A read guard, poisoned or not.
    fn read_locked(&self) -> RwLockReadGuard<'_, T>;
    /// A write guard, poisoned or not.
    fn write_locked(&self) -> RwLockWriteGuard<'_, T>;
}

impl<T: ?Sized> UnpoisonedRw<T> for RwLock<T> {
    fn read_locked(&self) -> RwLockReadGuard<'_, T> {
        self.read().unwrap_or_else(PoisonError::into_inner)
    }
    fn write_locked(&self) -> RwLockWriteGuard<'_, T> {
        self.write().unwrap_or_else(PoisonError::into_inner)
    }
}

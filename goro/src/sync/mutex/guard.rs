//! [`MutexGuard`]: holding the lock, and the only way to the data.
//!
//! The guard keeps the checked pointer to the data (loom's, under
//! `cfg(loom)`; a raw pointer otherwise) and drops it before it unlocks, so
//! the model checker sees every access to the data end inside the critical
//! section. It holds a reference to the mutex, not a thread's token, so it
//! may be sent to and dropped on another thread: unlocking is not tied to
//! the thread that locked (as in Go).

use super::Mutex;
use crate::loom::cell::MutPtr;
use std::fmt;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};

/// Holds a [`Mutex`] locked; unlocks it when dropped. Dereferences to the
/// protected value.
///
/// ```
/// let m = goro::sync::Mutex::new(0);
/// {
///     let mut g = m.lock_blocking();
///     *g += 1;
/// } // unlocked here
/// assert_eq!(*m.lock_blocking(), 1);
/// ```
#[must_use = "if unused the Mutex will immediately unlock"]
pub struct MutexGuard<'a, T: ?Sized> {
    mutex: &'a Mutex<T>,
    /// The checked access to the data (a raw pointer outside loom); dropped
    /// before the unlock so loom sees the access end inside the lock.
    data: ManuallyDrop<MutPtr<T>>,
}

// SAFETY: the guard gives exclusive access to `T` wherever it is, and unlocking
// from another thread is fine for this mutex (it is not tied to a thread), so
// moving it needs `T: Send`, like moving a `&mut T`.
unsafe impl<T: ?Sized + Send> Send for MutexGuard<'_, T> {}
// SAFETY: `&MutexGuard` only yields `&T`.
unsafe impl<T: ?Sized + Sync> Sync for MutexGuard<'_, T> {}

impl<T: ?Sized> Deref for MutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard owns the lock, so no other access to the data exists
        // until it is dropped, and the pointer came from the live mutex it
        // borrows.
        unsafe { MutPtr::deref(&self.data) }
    }
}

impl<T: ?Sized> DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`, and `&mut self` makes this the only reference
        // the guard hands out.
        unsafe { MutPtr::deref(&self.data) }
    }
}

impl<T: ?Sized> Drop for MutexGuard<'_, T> {
    fn drop(&mut self) {
        // SAFETY: `data` is dropped exactly once, here, and not used after.
        unsafe { ManuallyDrop::drop(&mut self.data) };
        self.mutex.unlock();
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: ?Sized + fmt::Display> fmt::Display for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&**self, f)
    }
}

impl<T: ?Sized> Mutex<T> {
    /// The guard for a lock just acquired.
    pub(super) fn guard(&self) -> MutexGuard<'_, T> {
        MutexGuard {
            mutex: self,
            data: ManuallyDrop::new(self.data.get_mut()),
        }
    }
}

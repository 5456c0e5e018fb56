//! The task table's lock (`table.rs`): a spin lock for a few
//! instructions' hold. Every spawn takes its shard's, nearly always
//! uncontended: one swap to take, one store to release. A futex mutex's
//! second atomic on release cost spawning a measurable share. A waiter
//! backs off with `Backoff::task_table` (spins, then yields).

use crate::loom::cell::{MutPtr, UnsafeCell};
#[cfg(not(loom))]
use crate::sched::backoff::Backoff;

/// A lock for a few instructions' hold (module docs). Under loom it is
/// loom's mutex: the models check the table's protocol above the lock, and
/// a spinning acquire would only multiply loom's branches.
pub(super) struct SpinLock<T> {
    #[cfg(not(loom))]
    locked: std::sync::atomic::AtomicBool,
    #[cfg(loom)]
    locked: loom::sync::Mutex<()>,
    value: UnsafeCell<T>,
}

// SAFETY: the value is only reached through the guard, which the lock
// hands to one thread at a time.
unsafe impl<T: Send> Sync for SpinLock<T> {}

impl<T> SpinLock<T> {
    pub(super) fn new(value: T) -> SpinLock<T> {
        SpinLock {
            locked: Default::default(),
            value: UnsafeCell::new(value),
        }
    }

    pub(super) fn lock(&self) -> SpinGuard<'_, T> {
        #[cfg(not(loom))]
        {
            let mut backoff = Backoff::task_table();
            // Acquire: pairs with the Release in `SpinGuard::drop`.
            while self.locked.swap(true, std::sync::atomic::Ordering::Acquire) {
                while self.locked.load(std::sync::atomic::Ordering::Relaxed) {
                    backoff.snooze();
                }
            }
        }
        SpinGuard {
            lock: self,
            #[cfg(loom)]
            _held: self.locked.lock().unwrap(),
            value: self.value.get_mut(),
        }
    }
}

/// The lock, held: the only way to the value (loom checks every access
/// through `value` against the others while the guard lives).
pub(super) struct SpinGuard<'a, T> {
    #[cfg_attr(loom, allow(dead_code))]
    lock: &'a SpinLock<T>,
    #[cfg(loom)]
    _held: loom::sync::MutexGuard<'a, ()>,
    value: MutPtr<T>,
}

impl<T> std::ops::Deref for SpinGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: we hold the lock.
        unsafe { self.value.deref() }
    }
}

impl<T> std::ops::DerefMut for SpinGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: we hold the lock, and `&mut self` makes this the only
        // reference through the guard.
        unsafe { self.value.deref() }
    }
}

impl<T> Drop for SpinGuard<'_, T> {
    fn drop(&mut self) {
        // Release: what we wrote under the lock is seen by the next holder.
        #[cfg(not(loom))]
        self.lock
            .locked
            .store(false, std::sync::atomic::Ordering::Release);
    }
}

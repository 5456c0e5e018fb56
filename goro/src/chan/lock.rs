//! The channel lock: a mutex that ignores poisoning and backs off before
//! it queues, as Go's runtime lock does.

use crate::loom::{Mutex, MutexGuard, Unpoison};

/// Locks, ignoring poisoning: no code that can panic runs under these locks
/// with a half-updated state (user values are never dropped under them).
///
/// A contended lock backs off before it queues (Go's runtime lock spins the
/// same way: a few rounds of 30 `PAUSE`s, then sleeps). The standard mutex
/// polls its word between single `PAUSE`s, so with two threads sending on
/// one channel the waiter kept pulling the line away from the holder and
/// every operation missed the cache; waiting politely lets the holder run
/// several operations with the line to itself.
#[inline]
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    #[cfg(not(loom))]
    return try_lock(m).unwrap_or_else(|| lock_contended(m));
    #[cfg(loom)]
    m.lock().unpoison()
}

/// One attempt, ignoring poisoning as [`lock`] does.
#[cfg(not(loom))]
#[inline]
fn try_lock<T>(m: &Mutex<T>) -> Option<MutexGuard<'_, T>> {
    match m.try_lock() {
        Ok(g) => Some(g),
        Err(std::sync::TryLockError::Poisoned(p)) => Some(p.into_inner()),
        Err(std::sync::TryLockError::WouldBlock) => None,
    }
}

/// [`lock`] when the lock is held: back off, then queue.
#[cfg(not(loom))]
#[cold]
#[inline(never)]
fn lock_contended<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    for _ in 0..LOCK_SPINS {
        for _ in 0..LOCK_SPIN_PAUSES {
            std::hint::spin_loop();
        }
        if let Some(g) = try_lock(m) {
            return g;
        }
    }
    m.lock().unpoison()
}

/// Rounds of backing off before a contended lock queues (Go: 4).
#[cfg(not(loom))]
const LOCK_SPINS: u32 = 4;
/// `PAUSE`s per round (Go: 30).
#[cfg(not(loom))]
const LOCK_SPIN_PAUSES: u32 = 30;

//! The channel lock: a mutex that ignores poisoning and backs off before
//! it queues, as Go's runtime lock does.

use crate::loom::{Mutex, MutexGuard, Unpoison};
#[cfg(not(loom))]
use crate::sched::backoff::{Backoff, Snooze};

/// Locks, ignoring poisoning: no code that can panic runs under these locks
/// with a half-updated state (user values are never dropped under them).
///
/// A contended lock backs off before it queues (`Backoff::chan_lock`; Go's
/// runtime lock spins the same way: a few rounds of 30 `PAUSE`s, then
/// sleeps). The standard mutex polls its word between single `PAUSE`s, so
/// with two threads sending on one channel the waiter kept pulling the line
/// away from the holder and every operation missed the cache; waiting
/// politely lets the holder run several operations with the line to itself.
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
    // 4 rounds of 30 `PAUSE`s, a `try_lock` after each (`Backoff::chan_lock`).
    let mut backoff = Backoff::chan_lock();
    while backoff.snooze() != Snooze::Done {
        if let Some(g) = try_lock(m) {
            return g;
        }
    }
    m.lock().unpoison()
}

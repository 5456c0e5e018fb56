//! [`Mutex`]: Go's `sync.Mutex` for tasks: one CAS when uncontended,
//! bounded spinning, then a FIFO wait queue with barging in normal mode and
//! direct handoff in starvation mode.
//!
//! # Why two modes (Go's reasoning, kept)
//!
//! In **normal mode** a woken waiter does not own the mutex: it competes with
//! lockers that are arriving right now, which are already on a CPU and usually
//! win. That is what makes a mutex fast under load: one task can lock it many
//! times in a row while waiters sleep. A waiter that loses goes back to the
//! *front* of the queue. But a waiter can lose forever, so once a waiter has
//! waited more than [`STARVATION_THRESHOLD`] (1 ms) it switches the mutex to
//! **starvation mode**: unlock hands ownership directly to the head waiter,
//! arriving lockers neither spin nor barge but queue at the tail. The mutex
//! returns to normal mode when the waiter handed the lock is the last one or
//! waited less than the threshold. (`internal/sync/mutex.go`,
//! `starvationThresholdNs`.)
//!
//! # Differences from Go, and why
//!
//! Go's waiters sleep on a runtime semaphore that counts releases ahead of
//! acquires, and a waiter infers "handoff" from seeing `STARVING` after it
//! wakes. Rust futures can be dropped at any `.await`, and a cancelled
//! waiter must be able to leave without stranding a release meant for it:
//! with a counting semaphore, a release in flight to a waiter that has left
//! would sit in the semaphore and later wake (or, in starvation mode, hand a
//! locked mutex to) someone else. So here the count in the state word is
//! changed under the queue lock together with the queue itself, no release is
//! ever stored, and the unlocker writes into the popped entry what it was
//! given ([`Notified::Woken`] or [`Notified::Handoff`]). A handoff sets
//! `LOCKED` on the waiter's behalf before waking it, so a handed-off future
//! that is dropped before it runs simply unlocks, passing the mutex on.
//! A woken future that is dropped gives up the `WOKEN` role and wakes the
//! next waiter if the mutex is free.
//!
//! Rejected: a fair (always handoff) mutex. Every contended unlock would
//! then wait for a wake-up and a context switch before anyone runs the
//! critical section again; Go measured normal mode as considerably faster
//! and keeps starvation mode for the tail.
//!
//! # Where things are
//!
//! - `state.rs`: the state word, its bits and invariants.
//! - `lock.rs`: [`LockFuture`], the locker's side: fast path, spinning,
//!   queueing, cancellation.
//! - `queue.rs`: what a queued lock call holds, and the unlock that wakes
//!   it or hands it the mutex.
//! - `guard.rs`: [`MutexGuard`].
//! - `clock.rs`: how long a waiter has waited (not at all, under loom).
//! - `tests.rs`: the state word after exact sequences.
//!
//! [`STARVATION_THRESHOLD`]: clock::STARVATION_THRESHOLD
//! [`Notified::Woken`]: queue::Notified::Woken
//! [`Notified::Handoff`]: queue::Notified::Handoff

mod clock;
mod guard;
mod lock;
mod queue;
mod state;
#[cfg(all(test, not(loom)))]
mod tests;

pub use guard::MutexGuard;
pub use lock::LockFuture;

use super::WaitList;
use crate::loom::cell::UnsafeCell;
use crate::loom::Unpoison;
use crate::loom::{AtomicUsize, Ordering::*};
use queue::Waiter;
use state::{LOCKED, STARVING};
use std::fmt;

/// An async mutual-exclusion lock for tasks, with Go's `sync.Mutex` fairness.
///
/// Locking a free mutex is one CAS. Under contention a locker spins briefly
/// (per the runtime's [`SpinPolicy`](crate::SpinPolicy)), then queues. In
/// normal mode a locker that is running may take the mutex ahead of a woken
/// waiter (throughput); once a waiter has waited more than 1 ms the mutex
/// switches to starvation mode, where unlock hands it directly to the
/// longest waiter and arrivals queue behind (fairness). The design notes are
/// at the top of `src/sync/mutex/mod.rs`.
///
/// The lock is held by the [`MutexGuard`] that [`lock`](Mutex::lock) returns
/// and released when the guard is dropped. It may be held across `.await`.
/// A panic while holding it does not poison it (as in Go and tokio).
///
/// ```
/// use goro::sync::Mutex;
/// let m = Mutex::new(0);
/// futures::executor::block_on(async {
///     *m.lock().await += 1;
/// });
/// assert_eq!(m.into_inner(), 1);
/// ```
pub struct Mutex<T: ?Sized> {
    state: AtomicUsize,
    queue: crate::loom::Mutex<WaitList<Waiter>>,
    data: UnsafeCell<T>,
}

// SAFETY: the mutex hands out access to `T` to one guard at a time, possibly on
// another thread, so sharing or sending it needs only `T: Send`, as for
// `std::sync::Mutex`.
unsafe impl<T: ?Sized + Send> Send for Mutex<T> {}
// SAFETY: as above: `&Mutex<T>` only ever yields exclusive access to `T`.
unsafe impl<T: ?Sized + Send> Sync for Mutex<T> {}

impl<T> Mutex<T> {
    /// Creates an unlocked mutex holding `value`.
    ///
    /// ```
    /// static COUNT: goro::sync::Mutex<u64> = goro::sync::Mutex::new(0);
    /// *COUNT.lock_blocking() += 1;
    /// ```
    #[cfg(not(loom))]
    pub const fn new(value: T) -> Mutex<T> {
        Mutex {
            state: AtomicUsize::new(0),
            queue: crate::loom::Mutex::new(WaitList::new()),
            data: UnsafeCell::new(value),
        }
    }

    /// Creates an unlocked mutex holding `value`.
    #[cfg(loom)]
    pub fn new(value: T) -> Mutex<T> {
        Mutex {
            state: AtomicUsize::new(0),
            queue: crate::loom::Mutex::new(WaitList::new()),
            data: UnsafeCell::new(value),
        }
    }

    /// Consumes the mutex and returns the value.
    ///
    /// ```
    /// let m = goro::sync::Mutex::new(String::from("go"));
    /// assert_eq!(m.into_inner(), "go");
    /// ```
    pub fn into_inner(self) -> T {
        self.data.into_inner()
    }
}

impl<T: ?Sized> Mutex<T> {
    /// Locks the mutex, waiting (without blocking the thread) while another
    /// guard holds it.
    ///
    /// Cancel-safe: dropping the future before it completes removes its place
    /// in the queue, and a lock already handed to it is passed on.
    ///
    /// ```
    /// use goro::sync::Mutex;
    /// let m = Mutex::new(vec![1]);
    /// futures::executor::block_on(async {
    ///     m.lock().await.push(2);
    ///     assert_eq!(*m.lock().await, [1, 2]);
    /// });
    /// ```
    pub fn lock(&self) -> LockFuture<'_, T> {
        LockFuture::new(self)
    }

    /// Locks the mutex, blocking the calling thread while it is held. For
    /// plain threads; inside a task use [`lock`](Mutex::lock).
    ///
    /// ```
    /// let m = goro::sync::Mutex::new(1);
    /// *m.lock_blocking() *= 10;
    /// assert_eq!(*m.lock_blocking(), 10);
    /// ```
    pub fn lock_blocking(&self) -> MutexGuard<'_, T> {
        crate::sched::machine::block_on::block_on(self.lock())
    }

    /// Locks the mutex if it is free now, without waiting. Fails in
    /// starvation mode even if the mutex looks free: it belongs to the head
    /// waiter.
    ///
    /// ```
    /// let m = goro::sync::Mutex::new(());
    /// let g = m.try_lock().expect("free");
    /// assert!(m.try_lock().is_none());
    /// drop(g);
    /// assert!(m.try_lock().is_some());
    /// ```
    pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        crate::sched::task::coop::spend();
        let mut old = self.state.load(Relaxed);
        loop {
            if old & (LOCKED | STARVING) != 0 {
                return None;
            }
            // Acquire: pairs with the Release of the previous owner's unlock.
            match self
                .state
                .compare_exchange(old, old | LOCKED, Acquire, Relaxed)
            {
                Ok(_) => return Some(self.guard()),
                Err(cur) => old = cur,
            }
        }
    }

    /// Returns a mutable reference to the value; no locking is needed since
    /// `&mut self` proves no guard exists.
    ///
    /// ```
    /// let mut m = goro::sync::Mutex::new(1);
    /// *m.get_mut() = 2;
    /// assert_eq!(*m.lock_blocking(), 2);
    /// ```
    pub fn get_mut(&mut self) -> &mut T {
        // SAFETY: `&mut self` excludes every guard and every other access.
        self.data.with_mut(|p| unsafe { &mut *p })
    }

    fn lock_queue(&self) -> crate::loom::MutexGuard<'_, WaitList<Waiter>> {
        // The queue lock is never held across user code, so it cannot be
        // poisoned by a panic we care about; take the data either way.
        self.queue.lock().unpoison()
    }
}

impl<T: Default> Default for Mutex<T> {
    fn default() -> Self {
        Mutex::new(T::default())
    }
}

impl<T> From<T> for Mutex<T> {
    fn from(value: T) -> Self {
        Mutex::new(value)
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for Mutex<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Mutex");
        match self.try_lock() {
            Some(g) => d.field("data", &&*g),
            None => d.field("data", &format_args!("<locked>")),
        };
        d.finish_non_exhaustive()
    }
}

//! [`OnceCell`]: a value initialized once, by an async initializer that only
//! one caller runs; Go's `sync.Once` / `sync.OnceValue` for tasks.
//!
//! # State
//!
//! `EMPTY -> RUNNING -> READY`, and `RUNNING -> EMPTY` when an initializer is
//! abandoned. The caller whose CAS moves `EMPTY -> RUNNING` is the only one
//! that writes the value; it publishes it with a Release store of `READY`,
//! and readers that load `READY` with Acquire read it without a lock. The
//! value is never written again while shared (only through `&mut self`).
//!
//! Callers that find `RUNNING` queue in a waiter list. The initializer, when
//! it finishes **or is abandoned** (its future dropped, or its initializer
//! panicked), stores the new state first and then releases every waiter;
//! a waiter re-checks the state under the waiter lock before it queues, so no
//! wake-up is lost. After an abandoned run, the released waiters race for
//! `EMPTY -> RUNNING` again and the winner runs *its own* initializer: like
//! Go's `sync.Once` after a panic, except that the cell stays usable, which
//! is what cancellation needs (a task that is merely cancelled should not
//! poison the cell for everyone).
//!
//! Rejected: running the first initializer to completion in a detached task
//! so that cancellation cannot abandon it. It would need a runtime, `Send +
//! 'static` initializers, and would keep running work nobody waits for.

use crate::loom::Unpoison;
use crate::sched::task::meta::{blocked_on, Reason};
use std::fmt;
use std::future::Future;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use super::{update_waker, WaitList};
use crate::loom::cell::UnsafeCell;
use crate::loom::{AtomicUsize, Ordering::*};

const EMPTY: usize = 0;
const RUNNING: usize = 1;
const READY: usize = 2;

/// A cell that is written once, by whichever caller gets to run its
/// initializer first; everyone else waits for that value.
///
/// ```
/// use goro::sync::OnceCell;
/// static CONFIG: OnceCell<String> = OnceCell::new();
/// let v = futures::executor::block_on(CONFIG.get_or_init(|| async { "loaded".to_string() }));
/// assert_eq!(v, "loaded");
/// assert_eq!(CONFIG.get().map(String::as_str), Some("loaded"));
/// ```
pub struct OnceCell<T> {
    state: AtomicUsize,
    waiters: crate::loom::Mutex<WaitList<Option<Waker>>>,
    value: UnsafeCell<MaybeUninit<T>>,
}

// SAFETY: the value is written by one thread and then read (and dropped) by
// any, so sending the cell needs `T: Send`...
unsafe impl<T: Send> Send for OnceCell<T> {}
// SAFETY: ...and sharing it needs `T: Sync` for the `&T` readers get, and
// `T: Send` because the value may be produced on another thread.
unsafe impl<T: Send + Sync> Sync for OnceCell<T> {}

impl<T> OnceCell<T> {
    /// Creates an empty cell.
    ///
    /// ```
    /// let cell = goro::sync::OnceCell::<u8>::new();
    /// assert!(cell.get().is_none());
    /// ```
    #[cfg(not(loom))]
    pub const fn new() -> OnceCell<T> {
        OnceCell {
            state: AtomicUsize::new(EMPTY),
            waiters: crate::loom::Mutex::new(WaitList::new()),
            value: UnsafeCell::new(MaybeUninit::uninit()),
        }
    }

    /// Creates an empty cell.
    #[cfg(loom)]
    pub fn new() -> OnceCell<T> {
        OnceCell {
            state: AtomicUsize::new(EMPTY),
            waiters: crate::loom::Mutex::new(WaitList::new()),
            value: UnsafeCell::new(MaybeUninit::uninit()),
        }
    }

    /// The value, if it has been initialized.
    ///
    /// ```
    /// let cell = goro::sync::OnceCell::new();
    /// assert_eq!(cell.get(), None);
    /// cell.set(3).unwrap();
    /// assert_eq!(cell.get(), Some(&3));
    /// ```
    pub fn get(&self) -> Option<&T> {
        // Acquire: pairs with the Release store of READY after the write.
        if self.state.load(Acquire) == READY {
            // SAFETY: READY means the value was written, and it is never written
            // again while `&self` exists.
            Some(unsafe { self.ready_value() })
        } else {
            None
        }
    }

    /// Mutable access to the value, if initialized.
    ///
    /// ```
    /// let mut cell = goro::sync::OnceCell::new();
    /// cell.set(1).unwrap();
    /// *cell.get_mut().unwrap() += 1;
    /// assert_eq!(cell.get(), Some(&2));
    /// ```
    pub fn get_mut(&mut self) -> Option<&mut T> {
        if self.state.load(Acquire) == READY {
            // SAFETY: READY means initialized; `&mut self` excludes other access.
            Some(self.value.with_mut(|p| unsafe { (*p).assume_init_mut() }))
        } else {
            None
        }
    }

    /// Stores `value` if the cell is empty and nobody is initializing it;
    /// otherwise gives `value` back.
    ///
    /// ```
    /// let cell = goro::sync::OnceCell::new();
    /// assert_eq!(cell.set(1), Ok(()));
    /// assert_eq!(cell.set(2), Err(2));
    /// ```
    pub fn set(&self, value: T) -> Result<(), T> {
        // Acquire on success: a previous abandoned run's state is irrelevant,
        // but keep the pairing uniform with `get_or_init`.
        match self
            .state
            .compare_exchange(EMPTY, RUNNING, Acquire, Relaxed)
        {
            Ok(_) => {
                self.complete(value);
                Ok(())
            }
            Err(_) => Err(value),
        }
    }

    /// Returns the value, running `init` to produce it if the cell is empty.
    ///
    /// Only one caller's initializer runs at a time; the others wait for its
    /// value. If the running initializer is cancelled (its future dropped) or
    /// panics, one of the waiting callers runs its own `init` instead. Calling
    /// `get_or_init` on the same cell from inside `init` never completes.
    ///
    /// ```
    /// use goro::sync::OnceCell;
    /// let cell = OnceCell::new();
    /// futures::executor::block_on(async {
    ///     assert_eq!(*cell.get_or_init(|| async { 1 }).await, 1);
    ///     assert_eq!(*cell.get_or_init(|| async { 2 }).await, 1); // not run
    /// });
    /// ```
    pub async fn get_or_init<F, Fut>(&self, init: F) -> &T
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = T>,
    {
        if let Some(v) = self.get() {
            return v;
        }
        loop {
            // Acquire: on failure with READY, pairs with the Release store.
            match self
                .state
                .compare_exchange(EMPTY, RUNNING, Acquire, Acquire)
            {
                Ok(_) => {
                    // We run the initializer. If this future is dropped or
                    // `init` panics, the guard hands the cell back.
                    let abandon = AbandonGuard { cell: self };
                    let value = init().await;
                    std::mem::forget(abandon);
                    return self.complete(value);
                }
                Err(READY) => {
                    // SAFETY: READY was loaded with Acquire: initialized, and
                    // never written again while `&self` exists.
                    return unsafe { self.ready_value() };
                }
                Err(_) => {
                    WaitNotRunning {
                        cell: self,
                        key: None,
                    }
                    .await
                }
            }
        }
    }

    /// Returns the value, running `init` on the calling thread to produce it
    /// if the cell is empty, blocking while another caller initializes it.
    /// For plain threads.
    ///
    /// ```
    /// let cell = goro::sync::OnceCell::new();
    /// assert_eq!(*cell.get_or_init_blocking(|| 42), 42);
    /// ```
    pub fn get_or_init_blocking(&self, init: impl FnOnce() -> T) -> &T {
        crate::sched::machine::block_on::block_on(self.get_or_init(|| std::future::ready(init())))
    }

    /// Consumes the cell and returns the value, if initialized.
    ///
    /// ```
    /// let cell = goro::sync::OnceCell::new();
    /// cell.set("v").unwrap();
    /// assert_eq!(cell.into_inner(), Some("v"));
    /// ```
    pub fn into_inner(mut self) -> Option<T> {
        self.take()
    }

    /// Takes the value out, leaving the cell empty.
    ///
    /// ```
    /// let mut cell = goro::sync::OnceCell::new();
    /// cell.set(1).unwrap();
    /// assert_eq!(cell.take(), Some(1));
    /// assert!(cell.get().is_none());
    /// ```
    pub fn take(&mut self) -> Option<T> {
        if self.state.load(Acquire) != READY {
            return None;
        }
        self.state.store(EMPTY, Relaxed);
        // SAFETY: READY means initialized; the state is now EMPTY, so the value
        // is read out exactly once and never dropped in place.
        Some(self.value.with_mut(|p| unsafe { (*p).assume_init_read() }))
    }

    /// # Safety
    /// The state must have been loaded as READY with Acquire.
    unsafe fn ready_value(&self) -> &T {
        // SAFETY: per the caller, initialized; the value is not written again
        // while `&self` lives, so the shared reference may outlive the closure.
        self.value.with(|p| unsafe { (*p).assume_init_ref() })
    }

    /// Writes the value of the run this caller owns (state RUNNING), publishes
    /// it and releases the waiters.
    fn complete(&self, value: T) -> &T {
        // SAFETY: we moved the state EMPTY -> RUNNING, so nobody else writes or
        // reads the value until we store READY.
        self.value.with_mut(|p| unsafe { (*p).write(value) });
        // Release: publishes the value to every Acquire load of READY.
        self.state.store(READY, Release);
        self.release_waiters();
        // SAFETY: we stored READY after writing the value.
        unsafe { self.ready_value() }
    }

    fn lock_waiters(&self) -> crate::loom::MutexGuard<'_, WaitList<Option<Waker>>> {
        // Never held across user code; a poisoned lock still holds a
        // consistent list.
        self.waiters.lock().unpoison()
    }

    /// Unlinks every waiter and wakes it (after the lock is released); each
    /// then re-reads the state.
    fn release_waiters(&self) {
        let mut wakers = Vec::new();
        self.lock_waiters().drain(|w| wakers.extend(w.take()));
        wakers.into_iter().for_each(Waker::wake);
    }
}

impl<T> Default for OnceCell<T> {
    fn default() -> Self {
        OnceCell::new()
    }
}

impl<T> Drop for OnceCell<T> {
    fn drop(&mut self) {
        drop(self.take());
    }
}

impl<T: fmt::Debug> fmt::Debug for OnceCell<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("OnceCell");
        match self.get() {
            Some(v) => d.field("value", v),
            None => d.field("value", &format_args!("<uninit>")),
        };
        d.finish()
    }
}

/// Hands a cell back (RUNNING -> EMPTY) and releases its waiters when the
/// run that holds it ends without a value: the future was dropped or `init`
/// panicked. Forgotten once the value is in.
struct AbandonGuard<'a, T> {
    cell: &'a OnceCell<T>,
}

impl<T> Drop for AbandonGuard<'_, T> {
    fn drop(&mut self) {
        self.cell.state.store(EMPTY, Release);
        self.cell.release_waiters();
    }
}

/// Resolves once the cell is no longer RUNNING, or once released (the
/// caller re-reads the state either way).
struct WaitNotRunning<'a, T> {
    cell: &'a OnceCell<T>,
    key: Option<usize>,
}

impl<T> Future for WaitNotRunning<'_, T> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let mut q = this.cell.lock_waiters();
        if let Some(key) = this.key {
            if q.is_linked(key) {
                update_waker(q.get_mut(key), cx.waker());
                blocked_on(Reason::Once, 0);
                return Poll::Pending;
            }
            q.remove(key);
            this.key = None;
            return Poll::Ready(());
        }
        // Checked under the waiter lock: the run that ends stores its state
        // before it takes this lock to release us.
        if this.cell.state.load(Acquire) != RUNNING {
            return Poll::Ready(());
        }
        this.key = Some(q.push_back(Some(cx.waker().clone())));
        blocked_on(Reason::Once, 0);
        Poll::Pending
    }
}

impl<T> Drop for WaitNotRunning<'_, T> {
    fn drop(&mut self) {
        if let Some(key) = self.key {
            self.cell.lock_waiters().remove(key);
        }
    }
}

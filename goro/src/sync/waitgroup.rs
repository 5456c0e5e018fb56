//! [`WaitGroup`]: Go's `sync.WaitGroup` for tasks and threads, as a
//! cloneable handle.
//!
//! A counter and a list of waiters. [`WaitGroup::add`] changes the counter
//! with one CAS; the change that brings it to zero releases every waiter
//! queued at that moment, under the waiter lock, and wakes them after.
//!
//! Invariant: the counter is never negative. An `add` that would make it so
//! panics with Go's message ("sync: negative WaitGroup counter") and leaves
//! the counter unchanged.
//!
//! A waiter checks the counter again under the waiter lock before it
//! queues; the `add` that reaches zero writes the counter before it takes
//! that lock, so a waiter either sees zero or is in the list when it is
//! drained: no lost wake-up. A released waiter completes even if the counter
//! has gone up again since (Go's semantics: `Wait` returns once the counter
//! was zero), so a `WaitGroup` can be reused for the next round at once.
//!
//! Rejected: Go's single 64-bit word (counter and waiter count) with a
//! semaphore. A dropped `wait` future would leave its count in the word and
//! a token in the semaphore for a later round; a list with owned slots lets a
//! cancelled waiter simply leave. Go's "WaitGroup is reused before previous
//! Wait has returned" panic has no reason to exist here for the same reason.

use crate::loom::Unpoison;
use crate::sched::task::meta::{blocked_on, Reason};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use super::{update_waker, WaitList};
use crate::loom::Arc;
use crate::loom::{AtomicUsize, Ordering::*};

/// A queued `wait`.
struct Waiter {
    waker: Option<Waker>,
}

struct Inner {
    /// The counter, an `isize` stored as its bits; never negative.
    count: AtomicUsize,
    waiters: crate::loom::Mutex<WaitList<Waiter>>,
}

/// Waits for a collection of tasks or threads to finish, like Go's
/// `sync.WaitGroup`. Cloning gives another handle to the same group.
///
/// ```
/// use goro::sync::WaitGroup;
/// let wg = WaitGroup::new();
/// for _ in 0..3 {
///     wg.add(1);
///     let wg = wg.clone();
///     std::thread::spawn(move || {
///         // ... work ...
///         wg.done();
///     });
/// }
/// futures::executor::block_on(wg.wait());
/// ```
#[derive(Clone)]
pub struct WaitGroup {
    inner: Arc<Inner>,
}

impl WaitGroup {
    /// Creates a group with a counter of zero.
    ///
    /// ```
    /// let wg = goro::sync::WaitGroup::new();
    /// wg.wait_blocking(); // zero: returns at once
    /// ```
    pub fn new() -> WaitGroup {
        WaitGroup {
            inner: Arc::new(Inner {
                count: AtomicUsize::new(0),
                waiters: crate::loom::Mutex::new(WaitList::new()),
            }),
        }
    }

    /// Adds `delta` (which may be negative) to the counter; when it reaches
    /// zero every current waiter is released.
    ///
    /// # Panics
    ///
    /// "sync: negative WaitGroup counter" if the counter would go below zero
    /// (the counter is left unchanged), and "sync: WaitGroup counter
    /// overflow" if it would exceed `isize::MAX`.
    ///
    /// ```
    /// let wg = goro::sync::WaitGroup::new();
    /// wg.add(2);
    /// wg.add(-2);
    /// wg.wait_blocking();
    /// ```
    pub fn add(&self, delta: isize) {
        let count = &self.inner.count;
        let mut cur = count.load(Relaxed);
        let new = loop {
            let Some(new) = (cur as isize).checked_add(delta) else {
                panic!("sync: WaitGroup counter overflow");
            };
            if new < 0 {
                panic!("sync: negative WaitGroup counter");
            }
            // AcqRel: Release publishes the work before `done` to the waiter
            // that sees zero (each add is an RMW, so every earlier Release
            // heads a release sequence the final value is part of).
            match count.compare_exchange_weak(cur, new as usize, AcqRel, Relaxed) {
                Ok(_) => break new,
                Err(c) => cur = c,
            }
        };
        if new == 0 && delta != 0 {
            self.release_waiters();
        }
    }

    /// The counter now (Acquire: what each `done` published before it is
    /// visible once it reads 0).
    pub(crate) fn count(&self) -> usize {
        self.inner.count.load(Acquire)
    }

    /// Decrements the counter by one (`add(-1)`).
    ///
    /// # Panics
    ///
    /// "sync: negative WaitGroup counter" if the counter is zero.
    ///
    /// ```
    /// let wg = goro::sync::WaitGroup::new();
    /// wg.add(1);
    /// wg.done();
    /// wg.wait_blocking();
    /// ```
    pub fn done(&self) {
        self.add(-1);
    }

    /// Waits until the counter is zero. Cancel-safe.
    ///
    /// ```
    /// let wg = goro::sync::WaitGroup::new();
    /// wg.add(1);
    /// let w = wg.clone();
    /// std::thread::spawn(move || w.done());
    /// futures::executor::block_on(wg.wait());
    /// ```
    pub fn wait(&self) -> WaitFuture<'_> {
        WaitFuture {
            wg: self,
            key: None,
        }
    }

    /// Blocks the calling thread until the counter is zero. For plain threads.
    ///
    /// ```
    /// let wg = goro::sync::WaitGroup::new();
    /// wg.add(1);
    /// let w = wg.clone();
    /// let t = std::thread::spawn(move || w.done());
    /// wg.wait_blocking();
    /// t.join().unwrap();
    /// ```
    pub fn wait_blocking(&self) {
        crate::sched::machine::block_on::block_on(self.wait())
    }

    fn lock_waiters(&self) -> crate::loom::MutexGuard<'_, WaitList<Waiter>> {
        // Never held across user code; a poisoned lock still holds a
        // consistent list.
        self.inner.waiters.lock().unpoison()
    }

    fn release_waiters(&self) {
        let mut wakers = Vec::new();
        self.lock_waiters().drain(|w| wakers.extend(w.waker.take()));
        wakers.into_iter().for_each(Waker::wake);
    }
}

impl Default for WaitGroup {
    fn default() -> Self {
        WaitGroup::new()
    }
}

impl fmt::Debug for WaitGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WaitGroup")
            .field("count", &(self.inner.count.load(Relaxed) as isize))
            .finish_non_exhaustive()
    }
}

/// The future returned by [`WaitGroup::wait`].
///
/// ```
/// let wg = goro::sync::WaitGroup::new();
/// let fut: goro::sync::WaitFuture<'_> = wg.wait();
/// futures::executor::block_on(fut);
/// ```
#[must_use = "futures do nothing unless polled"]
pub struct WaitFuture<'a> {
    wg: &'a WaitGroup,
    /// Our slot while queued (or released and not yet polled).
    key: Option<usize>,
}

impl Future for WaitFuture<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let count = &this.wg.inner.count;
        if let Some(key) = this.key {
            let mut q = this.wg.lock_waiters();
            if q.is_linked(key) {
                update_waker(&mut q.get_mut(key).waker, cx.waker());
                blocked_on(Reason::WaitGroup, 0);
                return Poll::Pending;
            }
            // Released by the add that reached zero; its writes happen before
            // ours through the waiter lock.
            q.remove(key);
            this.key = None;
            return Poll::Ready(());
        }
        // A safe point (`coop.rs`).
        if crate::sched::task::coop::poll_proceed(cx).is_pending() {
            return Poll::Pending;
        }
        // Acquire: pairs with the Release of the adds that brought it to zero.
        if count.load(Acquire) == 0 {
            return Poll::Ready(());
        }
        let mut q = this.wg.lock_waiters();
        if count.load(Acquire) == 0 {
            return Poll::Ready(());
        }
        this.key = Some(q.push_back(Waiter {
            waker: Some(cx.waker().clone()),
        }));
        blocked_on(Reason::WaitGroup, 0);
        Poll::Pending
    }
}

impl Drop for WaitFuture<'_> {
    fn drop(&mut self) {
        if let Some(key) = self.key {
            self.wg.lock_waiters().remove(key);
        }
    }
}

impl fmt::Debug for WaitFuture<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WaitFuture")
            .field("queued", &self.key.is_some())
            .finish()
    }
}

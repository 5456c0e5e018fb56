//! [`Semaphore`]: a counting semaphore for tasks with strict FIFO admission,
//! the engine of [`RwLock`](super::RwLock) too.
//!
//! Mirrors `golang.org/x/sync/semaphore.Weighted`: a waiter asks for `n`
//! permits, waiters are served in arrival order, and a large request at the
//! head is not overtaken by small ones behind it ("don't make other acquires
//! starve a large one"). Go gets FIFO from a list under a mutex; so do we,
//! plus a lock-free fast path.
//!
//! # State
//!
//! ```text
//!  usize: [ available permits (word - 1 bit) | QUEUED ]
//! ```
//!
//! Invariant: **while `QUEUED` is set, `available` is 0.** A waiter that cannot
//! be served takes every available permit as a partial assignment and sets
//! `QUEUED` in the same CAS, under the queue lock; from then on every released
//! permit goes, under the queue lock, to the head waiter until it is complete,
//! then to the next, and only what is left once the queue is empty returns to
//! `available` (clearing `QUEUED` in the same CAS). So:
//!
//! - the fast paths never take the queue lock: `try_acquire` is one CAS on
//!   `available` (it simply finds 0 while anyone waits, so it cannot barge),
//!   and a release while nobody waits is one CAS;
//! - a release that sees `QUEUED` takes the queue lock and serves waiters in
//!   order, waking them after the lock is released;
//! - a waiter owns its slot: the releaser only writes the permits it assigned
//!   into it and unlinks it once complete. A future dropped while queued
//!   returns the permits already assigned to it, which go on to the next
//!   waiters; one dropped after it was completed but before it ran returns
//!   them all. Nothing is lost either way.
//!
//! Rejected: letting arrivals take free permits while others wait (Go's
//! `sync.Mutex` barging). For a semaphore, small requests would starve a
//! large one forever; FIFO is what `Weighted` and tokio promise.

use crate::loom::Unpoison;
use crate::sched::task::meta::{blocked_on, Reason};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use super::{update_waker, WaitList};
use crate::loom::{AtomicUsize, Ordering::*};

const QUEUED: usize = 1;
const PERMIT_SHIFT: u32 = 1;

/// One queued acquire.
struct Waiter {
    waker: Option<Waker>,
    /// Permits still to be assigned; 0 once complete (and unlinked).
    remaining: usize,
}

/// A counting semaphore with FIFO fairness.
///
/// Waiters are served in arrival order: permits released while someone
/// waits go to the head waiter until it has all it asked for, so a large
/// request is never overtaken by small ones, and `try_acquire` fails while
/// anyone is queued.
///
/// ```
/// use goro::sync::Semaphore;
/// let sem = Semaphore::new(2);
/// let a = sem.try_acquire().unwrap();
/// let _b = sem.try_acquire().unwrap();
/// assert!(sem.try_acquire().is_none());
/// drop(a); // returns the permit
/// assert_eq!(sem.available_permits(), 1);
/// ```
pub struct Semaphore {
    state: AtomicUsize,
    queue: crate::loom::Mutex<WaitList<Waiter>>,
}

impl Semaphore {
    /// The most permits a semaphore can hold (and a single acquire can ask
    /// for).
    ///
    /// ```
    /// assert!(goro::sync::Semaphore::MAX_PERMITS >= u32::MAX as usize);
    /// ```
    pub const MAX_PERMITS: usize = usize::MAX >> 3;

    /// Creates a semaphore with `permits` permits.
    ///
    /// # Panics
    ///
    /// If `permits` exceeds [`Semaphore::MAX_PERMITS`].
    ///
    /// ```
    /// static LIMIT: goro::sync::Semaphore = goro::sync::Semaphore::new(8);
    /// assert_eq!(LIMIT.available_permits(), 8);
    /// ```
    #[cfg(not(loom))]
    pub const fn new(permits: usize) -> Semaphore {
        assert!(
            permits <= Semaphore::MAX_PERMITS,
            "sync: Semaphore::new: permits exceed Semaphore::MAX_PERMITS"
        );
        Semaphore {
            state: AtomicUsize::new(permits << PERMIT_SHIFT),
            queue: crate::loom::Mutex::new(WaitList::new()),
        }
    }

    /// Creates a semaphore with `permits` permits.
    #[cfg(loom)]
    pub fn new(permits: usize) -> Semaphore {
        assert!(
            permits <= Semaphore::MAX_PERMITS,
            "sync: Semaphore::new: permits exceed Semaphore::MAX_PERMITS"
        );
        Semaphore {
            state: AtomicUsize::new(permits << PERMIT_SHIFT),
            queue: crate::loom::Mutex::new(WaitList::new()),
        }
    }

    /// Permits that could be acquired right now without waiting (0 while
    /// anyone waits).
    ///
    /// ```
    /// let sem = goro::sync::Semaphore::new(3);
    /// let _p = sem.try_acquire_many(2).unwrap();
    /// assert_eq!(sem.available_permits(), 1);
    /// ```
    pub fn available_permits(&self) -> usize {
        self.state.load(Acquire) >> PERMIT_SHIFT
    }

    /// Adds `n` permits, serving queued waiters first.
    ///
    /// # Panics
    ///
    /// If the semaphore would hold more than [`Semaphore::MAX_PERMITS`].
    ///
    /// ```
    /// let sem = goro::sync::Semaphore::new(0);
    /// sem.add_permits(2);
    /// assert_eq!(sem.available_permits(), 2);
    /// ```
    pub fn add_permits(&self, n: usize) {
        let avail = self.available_permits();
        assert!(
            n <= Semaphore::MAX_PERMITS - avail,
            "sync: Semaphore::add_permits({n}) with {avail} available exceeds Semaphore::MAX_PERMITS ({})",
            Semaphore::MAX_PERMITS
        );
        self.release(n);
    }

    /// Acquires one permit, waiting in FIFO order.
    ///
    /// Cancel-safe: dropping the future gives back whatever it had been
    /// assigned and leaves the queue.
    ///
    /// ```
    /// let sem = goro::sync::Semaphore::new(1);
    /// futures::executor::block_on(async {
    ///     let permit = sem.acquire().await;
    ///     assert_eq!(permit.num_permits(), 1);
    /// });
    /// ```
    pub fn acquire(&self) -> AcquireFuture<'_> {
        self.acquire_many(1)
    }

    /// Acquires `n` permits at once, waiting in FIFO order; `n == 0`
    /// completes at once.
    ///
    /// # Panics
    ///
    /// If `n` exceeds [`Semaphore::MAX_PERMITS`] (it could never be granted).
    ///
    /// ```
    /// let sem = goro::sync::Semaphore::new(5);
    /// let p = futures::executor::block_on(sem.acquire_many(3));
    /// assert_eq!(sem.available_permits(), 2);
    /// drop(p);
    /// assert_eq!(sem.available_permits(), 5);
    /// ```
    pub fn acquire_many(&self, n: usize) -> AcquireFuture<'_> {
        assert!(
            n <= Semaphore::MAX_PERMITS,
            "sync: Semaphore::acquire_many({n}) exceeds Semaphore::MAX_PERMITS ({})",
            Semaphore::MAX_PERMITS
        );
        AcquireFuture {
            raw: Acquire::new(self, n, Reason::Semaphore),
        }
    }

    /// Acquires one permit, blocking the calling thread. For plain threads.
    ///
    /// ```
    /// let sem = goro::sync::Semaphore::new(1);
    /// let p = sem.acquire_blocking();
    /// assert_eq!(sem.available_permits(), 0);
    /// drop(p);
    /// ```
    pub fn acquire_blocking(&self) -> SemaphorePermit<'_> {
        crate::sched::machine::block_on::block_on(self.acquire())
    }

    /// Acquires `n` permits, blocking the calling thread. For plain threads.
    ///
    /// ```
    /// let sem = goro::sync::Semaphore::new(4);
    /// assert_eq!(sem.acquire_many_blocking(4).num_permits(), 4);
    /// ```
    pub fn acquire_many_blocking(&self, n: usize) -> SemaphorePermit<'_> {
        crate::sched::machine::block_on::block_on(self.acquire_many(n))
    }

    /// Acquires one permit if one is available and nobody is queued.
    ///
    /// ```
    /// let sem = goro::sync::Semaphore::new(1);
    /// let p = sem.try_acquire();
    /// assert!(p.is_some());
    /// assert!(sem.try_acquire().is_none());
    /// ```
    pub fn try_acquire(&self) -> Option<SemaphorePermit<'_>> {
        self.try_acquire_many(1)
    }

    /// Acquires `n` permits if they are available and nobody is queued.
    ///
    /// ```
    /// let sem = goro::sync::Semaphore::new(2);
    /// assert!(sem.try_acquire_many(3).is_none());
    /// assert!(sem.try_acquire_many(2).is_some());
    /// ```
    pub fn try_acquire_many(&self, n: usize) -> Option<SemaphorePermit<'_>> {
        crate::sched::task::coop::spend();
        self.try_acquire_raw(n)
            .then(|| SemaphorePermit { sem: self, n })
    }

    /// One CAS loop on `available`; never waits, never barges (`available`
    /// is 0 while anyone is queued).
    pub(crate) fn try_acquire_raw(&self, n: usize) -> bool {
        if n == 0 {
            return true;
        }
        let mut cur = self.state.load(Relaxed);
        loop {
            if cur >> PERMIT_SHIFT < n {
                return false;
            }
            // Acquire: pairs with the Release of the releases that made these
            // permits available (for RwLock, the critical sections before).
            match self
                .state
                .compare_exchange_weak(cur, cur - (n << PERMIT_SHIFT), Acquire, Relaxed)
            {
                Ok(_) => return true,
                Err(c) => cur = c,
            }
        }
    }

    /// Returns `n` permits: to `available` while nobody waits, else to the
    /// waiters in order.
    pub(crate) fn release(&self, n: usize) {
        if n == 0 {
            return;
        }
        let mut cur = self.state.load(Relaxed);
        while cur & QUEUED == 0 {
            // Release: publishes the holder's writes to the next acquirer.
            match self
                .state
                .compare_exchange_weak(cur, cur + (n << PERMIT_SHIFT), Release, Relaxed)
            {
                Ok(_) => return,
                Err(c) => cur = c,
            }
        }
        let wakers = {
            let mut q = self.lock_queue();
            self.release_locked(&mut q, n)
        };
        wakers.into_iter().for_each(Waker::wake);
    }

    /// Assigns `rem` permits to the waiters in order, unlinking each one it
    /// completes, then publishes what is left and whether anyone still waits.
    /// Returns the wakers to call once the queue lock is released.
    fn release_locked(&self, q: &mut WaitList<Waiter>, mut rem: usize) -> Vec<Waker> {
        let mut wakers = Vec::new();
        while rem > 0 {
            let Some(head) = q.front() else { break };
            let w = q.get_mut(head);
            let give = rem.min(w.remaining);
            w.remaining -= give;
            rem -= give;
            if w.remaining != 0 {
                break;
            }
            wakers.extend(w.waker.take());
            q.pop_front();
        }
        let queued = if q.is_empty() { 0 } else { QUEUED };
        debug_assert!(
            queued == 0 || rem == 0,
            "permits left over while a waiter is unserved"
        );
        let mut cur = self.state.load(Relaxed);
        loop {
            let new = ((cur & !QUEUED) + (rem << PERMIT_SHIFT)) | queued;
            // AcqRel: Release publishes returned permits to fast-path
            // acquirers; Acquire keeps this CAS after the releases it adds to.
            match self.state.compare_exchange_weak(cur, new, AcqRel, Relaxed) {
                Ok(_) => return wakers,
                Err(c) => cur = c,
            }
        }
    }

    fn lock_queue(&self) -> crate::loom::MutexGuard<'_, WaitList<Waiter>> {
        // Never held across user code; a poisoned lock still holds a
        // consistent queue.
        self.queue.lock().unpoison()
    }
}

impl fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Semaphore")
            .field("available_permits", &self.available_permits())
            .finish_non_exhaustive()
    }
}

/// Where an [`Acquire`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wait {
    Start,
    Queued(usize),
    Done,
}

/// The state machine of one acquire of `n` permits, shared by
/// [`AcquireFuture`] and the [`RwLock`](super::RwLock) futures. Dropping it
/// while queued returns what it was assigned.
pub(crate) struct Acquire<'a> {
    sem: &'a Semaphore,
    n: usize,
    wait: Wait,
    /// What the task dump says a task parked here waits on.
    reason: Reason,
}

impl<'a> Acquire<'a> {
    pub(crate) fn new(sem: &'a Semaphore, n: usize, reason: Reason) -> Acquire<'a> {
        Acquire {
            sem,
            n,
            wait: Wait::Start,
            reason,
        }
    }

    /// Polls for the `n` permits; once `Ready`, the caller owns them.
    pub(crate) fn poll_acquire(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let sem = self.sem;
        match self.wait {
            Wait::Done => panic!("semaphore acquire polled after completion"),
            Wait::Queued(key) => {
                let mut q = sem.lock_queue();
                let w = q.get_mut(key);
                if w.remaining != 0 {
                    update_waker(&mut w.waker, cx.waker());
                    blocked_on(self.reason, 0);
                    return Poll::Pending;
                }
                // Completed by a release under the queue lock we now hold: its
                // writes happen before ours.
                q.remove(key);
                self.wait = Wait::Done;
                return Poll::Ready(());
            }
            Wait::Start => {}
        }
        // A safe point (`coop.rs`), before taking anything.
        if crate::sched::task::coop::poll_proceed(cx).is_pending() {
            return Poll::Pending;
        }
        if sem.try_acquire_raw(self.n) {
            self.wait = Wait::Done;
            return Poll::Ready(());
        }
        let mut q = sem.lock_queue();
        let mut cur = sem.state.load(Relaxed);
        let remaining = loop {
            let take = (cur >> PERMIT_SHIFT).min(self.n);
            let remaining = self.n - take;
            let mut new = cur - (take << PERMIT_SHIFT);
            if remaining != 0 {
                new |= QUEUED;
            }
            // Acquire: as in `try_acquire_raw`. Setting QUEUED in the same CAS
            // that takes the last permits keeps "QUEUED implies none
            // available"; a fast-path release either lands first (and we take
            // its permits) or sees QUEUED and waits for the queue lock.
            match sem.state.compare_exchange_weak(cur, new, AcqRel, Relaxed) {
                Ok(_) => break remaining,
                Err(c) => cur = c,
            }
        };
        if remaining == 0 {
            self.wait = Wait::Done;
            return Poll::Ready(());
        }
        let key = q.push_back(Waiter {
            waker: Some(cx.waker().clone()),
            remaining,
        });
        self.wait = Wait::Queued(key);
        blocked_on(self.reason, 0);
        Poll::Pending
    }
}

impl Drop for Acquire<'_> {
    fn drop(&mut self) {
        let Wait::Queued(key) = self.wait else { return };
        let wakers = {
            let mut q = self.sem.lock_queue();
            let w = q.remove(key);
            // Hand on what we were given; with 0 this still clears QUEUED if
            // we were the last waiter.
            self.sem.release_locked(&mut q, self.n - w.remaining)
        };
        wakers.into_iter().for_each(Waker::wake);
    }
}

/// The future returned by [`Semaphore::acquire`] and
/// [`Semaphore::acquire_many`].
///
/// ```
/// let sem = goro::sync::Semaphore::new(1);
/// let fut: goro::sync::AcquireFuture<'_> = sem.acquire();
/// drop(futures::executor::block_on(fut));
/// ```
#[must_use = "futures do nothing unless polled"]
pub struct AcquireFuture<'a> {
    raw: Acquire<'a>,
}

impl<'a> Future for AcquireFuture<'a> {
    type Output = SemaphorePermit<'a>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<SemaphorePermit<'a>> {
        let this = self.get_mut();
        this.raw.poll_acquire(cx).map(|()| SemaphorePermit {
            sem: this.raw.sem,
            n: this.raw.n,
        })
    }
}

impl fmt::Debug for AcquireFuture<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AcquireFuture")
            .field("n", &self.raw.n)
            .field("wait", &self.raw.wait)
            .finish_non_exhaustive()
    }
}

/// Permits acquired from a [`Semaphore`]; returned to it on drop.
///
/// ```
/// let sem = goro::sync::Semaphore::new(3);
/// let p = sem.try_acquire_many(2).unwrap();
/// assert_eq!(p.num_permits(), 2);
/// drop(p);
/// assert_eq!(sem.available_permits(), 3);
/// ```
#[must_use = "dropping a permit returns it at once"]
pub struct SemaphorePermit<'a> {
    sem: &'a Semaphore,
    n: usize,
}

impl SemaphorePermit<'_> {
    /// How many permits this holds.
    ///
    /// ```
    /// let sem = goro::sync::Semaphore::new(1);
    /// assert_eq!(sem.try_acquire().unwrap().num_permits(), 1);
    /// ```
    pub fn num_permits(&self) -> usize {
        self.n
    }

    /// Drops the permits without returning them: the semaphore shrinks.
    ///
    /// ```
    /// let sem = goro::sync::Semaphore::new(2);
    /// sem.try_acquire().unwrap().forget();
    /// assert_eq!(sem.available_permits(), 1);
    /// ```
    pub fn forget(mut self) {
        self.n = 0;
    }
}

impl Drop for SemaphorePermit<'_> {
    fn drop(&mut self) {
        self.sem.release(self.n);
    }
}

impl fmt::Debug for SemaphorePermit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SemaphorePermit")
            .field("n", &self.n)
            .finish_non_exhaustive()
    }
}

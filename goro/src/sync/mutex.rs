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
//! # The state word
//!
//! ```text
//!  usize: [ waiters (word - 3 bits) | STARVING | WOKEN | LOCKED ]
//! ```
//!
//! - `LOCKED`: someone owns the mutex. Set by a locker's CAS while `STARVING`
//!   is clear, or by the unlocker during a handoff; cleared by the owner's
//!   unlock (one `fetch_sub`).
//! - `WOKEN`: a task is awake and about to compete for the mutex (a spinner
//!   that set it, or the waiter an unlocker woke), so unlockers must not wake
//!   another. Set by a spinner's CAS or by the unlocker that wakes a waiter;
//!   cleared only by that awake task: by its next successful CAS, or by its
//!   future's `drop`. At most one task holds the `WOKEN` role.
//! - `STARVING`: starvation mode. Set only by a woken waiter that has waited
//!   past the threshold and finds the mutex locked again; cleared by the
//!   handoff that gives the lock to the last or a not-yet-starving waiter, or
//!   by the departure of the last queued waiter.
//! - `waiters`: the number of entries linked in the wait queue. Changed only
//!   while the queue lock is held (a waiter counts itself as it links its
//!   entry; the unlocker uncounts the entry it pops; a cancelled waiter
//!   uncounts itself as it unlinks), so under that lock the count always
//!   equals the queue's length.
//!
//! Invariants: `STARVING` implies `waiters >= 1`; while `STARVING` is set,
//! only a handoff sets `LOCKED`, so "`STARVING` and not `LOCKED`" means an
//! unlock is on its way to hand the mutex to the head waiter.
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
//! Spinning goes through [`Backoff`] with the runtime's [`SpinPolicy`]
//! (seed 000): a few doubling bursts of `pause`, then `sched_yield`, then the
//! wait queue; never on a single-CPU machine, never in starvation mode (the
//! lock is handed to a waiter, spinning cannot win it).
//!
//! Rejected: a fair (always handoff) mutex. Every contended unlock would
//! then wait for a wake-up and a context switch before anyone runs the
//! critical section again; Go measured normal mode as considerably faster
//! and keeps starvation mode for the tail.
//!
//! [`SpinPolicy`]: crate::SpinPolicy

use crate::loom::Unpoison;
use crate::sched::task_meta::{blocked_on, Reason};
use std::fmt;
use std::future::Future;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use super::cell::{MutPtr, UnsafeCell};
use super::{update_waker, WaitList};
use crate::loom::{AtomicUsize, Ordering::*};
use crate::sched::backoff::{Backoff, Snooze};

const LOCKED: usize = 1;
const WOKEN: usize = 1 << 1;
const STARVING: usize = 1 << 2;
const WAITER_SHIFT: u32 = 3;
const ONE_WAITER: usize = 1 << WAITER_SHIFT;

fn waiters(state: usize) -> usize {
    state >> WAITER_SHIFT
}

/// How long a waiter may wait before it switches the mutex to starvation
/// mode (Go's `starvationThresholdNs`).
#[cfg_attr(loom, allow(dead_code))]
pub(crate) const STARVATION_THRESHOLD: std::time::Duration = std::time::Duration::from_millis(1);

/// Spin rounds a locker may spend before it queues, whatever the policy (the
/// "own budget" that ends an `Unbounded` wait; Go's `active_spin` is 4 rounds
/// of 30 `pause`s). Under loom a spin is a `yield_now`, which makes loom
/// run the other threads first and so hides the very interleavings in which
/// a locker queues behind a running owner; loom models therefore do not spin
/// (a locker still takes the `WOKEN` role before it queues).
const MAX_SPIN_ROUNDS: u32 = if cfg!(loom) { 0 } else { 8 };

/// Wait-time measurement. Under loom, time is not part of the model and must
/// not make runs diverge, so every wake-up counts as a long wait: the model
/// then reaches starvation mode as soon as a woken waiter loses a race.
#[cfg(not(loom))]
mod clock {
    pub(super) type Stamp = std::time::Instant;
    pub(super) fn now() -> Stamp {
        std::time::Instant::now()
    }
    pub(super) fn waited_too_long(since: Stamp) -> bool {
        since.elapsed() > super::STARVATION_THRESHOLD
    }
}

#[cfg(loom)]
mod clock {
    #[derive(Clone, Copy, Debug)]
    pub(super) struct Stamp;
    pub(super) fn now() -> Stamp {
        Stamp
    }
    pub(super) fn waited_too_long(_since: Stamp) -> bool {
        true
    }
}

/// Whether spinning can ever help: on one CPU the owner cannot run while we
/// spin (Go's `runtime_canSpin` checks `ncpu > 1` first).
fn can_spin() -> bool {
    #[cfg(loom)]
    {
        true
    }
    #[cfg(not(loom))]
    {
        static MULTICORE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *MULTICORE.get_or_init(|| std::thread::available_parallelism().is_ok_and(|n| n.get() > 1))
    }
}

/// Why a queued waiter was unlinked from the queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Notified {
    /// Normal mode: woken to compete for the mutex; holds the `WOKEN` role.
    Woken,
    /// Starvation mode: `LOCKED` was set on the waiter's behalf; it owns the
    /// mutex.
    Handoff,
}

/// One queued `lock` call.
struct Waiter {
    waker: Option<Waker>,
    notified: Option<Notified>,
    /// When this lock call first queued.
    wait_start: clock::Stamp,
    /// Whether it had already waited past the threshold when it queued.
    starving: bool,
}

/// An async mutual-exclusion lock for tasks, with Go's `sync.Mutex` fairness.
///
/// Locking a free mutex is one CAS. Under contention a locker spins briefly
/// (per the runtime's [`SpinPolicy`](crate::SpinPolicy)), then queues. In
/// normal mode a locker that is running may take the mutex ahead of a woken
/// waiter (throughput); once a waiter has waited more than 1 ms the mutex
/// switches to starvation mode, where unlock hands it directly to the
/// longest waiter and arrivals queue behind (fairness). The design notes are
/// at the top of `src/sync/mutex.rs`.
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
        LockFuture {
            mutex: self,
            wait: Wait::Start,
            wait_start: None,
            starving: false,
            awoke: false,
        }
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
        super::block_on(self.lock())
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
        crate::sched::coop::spend();
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

    /// The guard for a lock just acquired.
    fn guard(&self) -> MutexGuard<'_, T> {
        MutexGuard {
            mutex: self,
            data: ManuallyDrop::new(self.data.get_mut()),
        }
    }

    fn lock_queue(&self) -> crate::loom::MutexGuard<'_, WaitList<Waiter>> {
        // The queue lock is never held across user code, so it cannot be
        // poisoned by a panic we care about; take the data either way.
        self.queue.lock().unpoison()
    }

    /// Releases the lock (Go's `Unlock`): one `fetch_sub`, then the slow path
    /// only if someone waits.
    fn unlock(&self) {
        // Release: publishes the critical section to the next owner, whose
        // Acquire CAS (or handoff CAS) reads this value or a later one in its
        // release sequence.
        let new = self.state.fetch_sub(LOCKED, Release).wrapping_sub(LOCKED);
        if new != 0 {
            self.unlock_slow(new);
        }
    }

    /// Wakes the head waiter (normal mode) or hands it the mutex (starvation
    /// mode) if the state `seen` says that is needed. Also run by a woken
    /// future that is dropped, after it gives up `WOKEN`. Idempotent: the
    /// decision is taken again under the queue lock, so any of several racing
    /// callers may be the one that acts.
    fn unlock_slow(&self, seen: usize) {
        if !wake_needed(seen) {
            return;
        }
        let waker = {
            let mut q = self.lock_queue();
            let mut old = self.state.load(Relaxed);
            loop {
                if !wake_needed(old) {
                    return;
                }
                let head = q
                    .front()
                    .expect("sync: mutex counts a waiter its queue does not hold");
                let (new, kind) = if old & STARVING != 0 {
                    let w = q.get_mut(head);
                    let starving = w.starving || clock::waited_too_long(w.wait_start);
                    let mut new = (old | LOCKED) - ONE_WAITER;
                    if waiters(old) == 1 || !starving {
                        new &= !STARVING;
                    }
                    (new, Notified::Handoff)
                } else {
                    ((old - ONE_WAITER) | WOKEN, Notified::Woken)
                };
                // AcqRel: on a handoff this CAS takes the lock on the head's
                // behalf, so it must see the last owner's critical section (it
                // reads the release sequence of that owner's unlock) and pass it
                // on; the head reads it after locking the queue lock we hold.
                match self.state.compare_exchange(old, new, AcqRel, Relaxed) {
                    Ok(_) => {
                        q.pop_front();
                        let w = q.get_mut(head);
                        w.notified = Some(kind);
                        break w.waker.take();
                    }
                    Err(cur) => old = cur,
                }
            }
        };
        if let Some(w) = waker {
            w.wake();
        }
    }
}

/// Whether an unlocked state needs the head waiter woken or handed the lock.
fn wake_needed(state: usize) -> bool {
    state & LOCKED == 0 && waiters(state) != 0 && (state & STARVING != 0 || state & WOKEN == 0)
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

/// Where a [`LockFuture`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wait {
    /// Not queued (first poll, or just woken in normal mode).
    Start,
    /// Linked in the queue, or unlinked and notified but not yet polled.
    Queued(usize),
    Done,
}

/// The future returned by [`Mutex::lock`].
///
/// ```
/// let m = goro::sync::Mutex::new(5);
/// let fut: goro::sync::LockFuture<'_, i32> = m.lock();
/// assert_eq!(*futures::executor::block_on(fut), 5);
/// ```
#[must_use = "futures do nothing unless polled"]
pub struct LockFuture<'a, T: ?Sized> {
    mutex: &'a Mutex<T>,
    wait: Wait,
    /// When this call first queued (Go's `waitStartTime`); also means "queue
    /// at the front next time" (Go's `queueLifo`).
    wait_start: Option<clock::Stamp>,
    /// Has waited past the threshold (Go's `starving` local).
    starving: bool,
    /// Holds the `WOKEN` role (Go's `awoke`).
    awoke: bool,
}

impl<'a, T: ?Sized> Future for LockFuture<'a, T> {
    type Output = MutexGuard<'a, T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<MutexGuard<'a, T>> {
        let this = self.get_mut();
        let m = this.mutex;
        match this.wait {
            Wait::Done => panic!("LockFuture polled after completion"),
            Wait::Start => {
                // A safe point (`coop.rs`), before taking anything.
                if crate::sched::coop::poll_proceed(cx).is_pending() {
                    return Poll::Pending;
                }
                // Fast path: grab an unlocked mutex. Acquire: pairs with the
                // Release of the previous owner's unlock.
                if m.state
                    .compare_exchange(0, LOCKED, Acquire, Relaxed)
                    .is_ok()
                {
                    this.wait = Wait::Done;
                    return Poll::Ready(m.guard());
                }
            }
            Wait::Queued(key) => {
                let mut q = m.lock_queue();
                let w = q.get_mut(key);
                match w.notified {
                    None => {
                        update_waker(&mut w.waker, cx.waker());
                        blocked_on(Reason::Mutex, 0);
                        return Poll::Pending;
                    }
                    Some(Notified::Handoff) => {
                        q.remove(key);
                        this.wait = Wait::Done;
                        return Poll::Ready(m.guard());
                    }
                    Some(Notified::Woken) => {
                        q.remove(key);
                        drop(q);
                        this.wait = Wait::Start;
                        this.awoke = true;
                        if let Some(start) = this.wait_start {
                            this.starving |= clock::waited_too_long(start);
                        }
                    }
                }
            }
        }
        if this.lock_slow(cx).is_ready() {
            this.wait = Wait::Done;
            return Poll::Ready(m.guard());
        }
        blocked_on(Reason::Mutex, 0);
        Poll::Pending
    }
}

impl<T: ?Sized> LockFuture<'_, T> {
    /// Go's `lockSlow`: spin while the owner runs, then take the mutex if it
    /// is free, else queue (at the front if this call has queued before).
    // Under loom the spin budget is 0, which clippy finds absurd.
    #[cfg_attr(loom, allow(clippy::absurd_extreme_comparisons))]
    fn lock_slow(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let m = self.mutex;
        let mut backoff = Backoff::new(crate::sched::current_spin_policy());
        let mut rounds = 0;
        let mut may_spin = can_spin();
        let mut old = m.state.load(Relaxed);
        loop {
            // Spin only while an owner runs in normal mode; in starvation mode
            // the mutex goes to the head waiter, spinning cannot win it.
            if may_spin && old & (LOCKED | STARVING) == LOCKED {
                // Take the WOKEN role if nobody holds it, so that the owner's
                // unlock does not wake a waiter that would only lose to us.
                if !self.awoke
                    && old & WOKEN == 0
                    && waiters(old) != 0
                    && m.state
                        .compare_exchange(old, old | WOKEN, Relaxed, Relaxed)
                        .is_ok()
                {
                    self.awoke = true;
                }
                if rounds < MAX_SPIN_ROUNDS && backoff.snooze() != Snooze::Done {
                    rounds += 1;
                    old = m.state.load(Relaxed);
                    continue;
                }
                may_spin = false;
            }
            if old & (LOCKED | STARVING) != 0 {
                break;
            }
            let mut new = old | LOCKED;
            if self.awoke {
                new &= !WOKEN;
            }
            // Acquire: pairs with the Release of the previous owner's unlock.
            match m.state.compare_exchange(old, new, Acquire, Relaxed) {
                Ok(_) => {
                    self.awoke = false;
                    return Poll::Ready(());
                }
                Err(cur) => old = cur,
            }
        }

        // Queue. The waiter count changes only under the queue lock, together
        // with the queue, so unlockers and cancelled waiters always agree on
        // who is queued.
        let mut q = m.lock_queue();
        let mut old = m.state.load(Relaxed);
        loop {
            let mut new = old;
            if old & STARVING == 0 {
                new |= LOCKED;
            }
            if old & (LOCKED | STARVING) != 0 {
                new += ONE_WAITER;
            }
            if self.starving && old & LOCKED != 0 {
                new |= STARVING;
            }
            if self.awoke {
                debug_assert!(old & WOKEN != 0, "sync: inconsistent mutex state");
                new &= !WOKEN;
            }
            // Acquire: if this takes a free mutex, pairs with the last unlock.
            match m.state.compare_exchange(old, new, Acquire, Relaxed) {
                Ok(_) => break,
                Err(cur) => old = cur,
            }
        }
        self.awoke = false;
        if old & (LOCKED | STARVING) == 0 {
            // It was freed while we took the queue lock: ours now.
            return Poll::Ready(());
        }
        let requeue = self.wait_start.is_some();
        let wait_start = *self.wait_start.get_or_insert_with(clock::now);
        let waiter = Waiter {
            waker: Some(cx.waker().clone()),
            notified: None,
            wait_start,
            starving: self.starving,
        };
        // A woken waiter that lost goes back to the front (Go's queueLifo).
        let key = if requeue {
            q.push_front(waiter)
        } else {
            q.push_back(waiter)
        };
        self.wait = Wait::Queued(key);
        Poll::Pending
    }
}

impl<T: ?Sized> Drop for LockFuture<'_, T> {
    fn drop(&mut self) {
        let Wait::Queued(key) = self.wait else { return };
        let m = self.mutex;
        let mut q = m.lock_queue();
        match q.remove(key).notified {
            None => {
                // Still queued and counted: uncount ourselves under the queue
                // lock. The last waiter to leave also ends starvation mode
                // (STARVING implies a waiter). An unlock in flight re-reads the
                // state under the queue lock and acts on what is left.
                let mut old = m.state.load(Relaxed);
                loop {
                    let mut new = old - ONE_WAITER;
                    if waiters(new) == 0 {
                        new &= !STARVING;
                    }
                    match m.state.compare_exchange(old, new, Relaxed, Relaxed) {
                        Ok(_) => break,
                        Err(cur) => old = cur,
                    }
                }
            }
            Some(Notified::Woken) => {
                // We hold the WOKEN role but will not compete: give it up and
                // wake the next waiter if the mutex is free.
                drop(q);
                let new = m.state.fetch_and(!WOKEN, Relaxed) & !WOKEN;
                m.unlock_slow(new);
            }
            Some(Notified::Handoff) => {
                // The mutex was handed to us: we own it. Unlocking passes it on
                // (to the next waiter in starvation mode) or frees it.
                drop(q);
                m.unlock();
            }
        }
    }
}

impl<T: ?Sized> fmt::Debug for LockFuture<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LockFuture")
            .field("wait", &self.wait)
            .finish_non_exhaustive()
    }
}

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

#[cfg(all(test, not(loom)))]
mod tests {
    //! The state word after exact sequences (the integration tests in
    //! `tests/sync_mutex.rs` check the same paths by behaviour only).
    use super::*;
    use std::sync::Arc;
    use std::task::Wake;

    struct Noop;
    impl Wake for Noop {
        fn wake(self: Arc<Self>) {}
    }

    fn poll<F: Future + Unpin>(f: &mut F) -> Poll<F::Output> {
        let waker = Waker::from(Arc::new(Noop));
        Pin::new(f).poll(&mut Context::from_waker(&waker))
    }

    fn state<T>(m: &Mutex<T>) -> usize {
        m.state.load(SeqCst)
    }

    #[test]
    fn queued_waiter_is_counted_and_uncounted_when_cancelled() {
        let m = Mutex::new(());
        let g = m.lock_blocking();
        let mut f = m.lock();
        assert!(poll(&mut f).is_pending());
        assert_eq!(state(&m), LOCKED | ONE_WAITER);
        drop(f);
        assert_eq!(state(&m), LOCKED, "a cancelled waiter must leave the count");
        drop(g);
        assert_eq!(state(&m), 0);
    }

    #[test]
    fn woken_waiter_holds_the_woken_role_until_it_runs_or_is_dropped() {
        let m = Mutex::new(());
        let g = m.lock_blocking();
        let mut f = m.lock();
        assert!(poll(&mut f).is_pending());
        drop(g);
        assert_eq!(
            state(&m),
            WOKEN,
            "unlock uncounts the waiter it wakes and sets WOKEN"
        );
        drop(f);
        assert_eq!(state(&m), 0, "a dropped woken waiter gives up WOKEN");
    }

    #[test]
    fn handoff_locks_on_the_waiters_behalf_and_ends_starvation_with_the_last_waiter() {
        let m = Mutex::new(());
        let g = m.lock_blocking();
        let mut f = m.lock();
        assert!(poll(&mut f).is_pending());
        std::thread::sleep(STARVATION_THRESHOLD * 3); // the waiter's age is the input
        drop(g);
        let barger = m.try_lock().expect("normal mode");
        assert!(
            poll(&mut f).is_pending(),
            "lost after waiting past the threshold"
        );
        assert_eq!(state(&m), LOCKED | STARVING | ONE_WAITER);
        drop(barger);
        assert_eq!(
            state(&m),
            LOCKED,
            "handed off: locked for the waiter, last waiter ends starvation"
        );
        drop(f);
        assert_eq!(state(&m), 0, "a dropped owner-by-handoff unlocks");
    }
}

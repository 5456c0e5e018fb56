//! [`LockFuture`]: the locker's side of the mutex (Go's `Lock` and
//! `lockSlow`).
//!
//! A poll tries, in order: one CAS on a free mutex; spinning while the
//! owner runs; a CAS that takes the mutex if it is free; else it queues, at
//! the back the first time and at the front after it was woken and lost
//! (Go's `queueLifo`). A woken waiter that has waited past the threshold and
//! loses again switches the mutex to starvation mode.
//!
//! Spinning goes through [`Backoff`] with the runtime's [`SpinPolicy`]
//! (seed 000): a few doubling bursts of `pause`, then `sched_yield`, then the
//! wait queue; never on a single-CPU machine, never in starvation mode (the
//! lock is handed to a waiter, spinning cannot win it).
//!
//! Rejected: Go's `canSpin` in full, which also refuses to spin unless
//! another P is running and this P's run queue is empty. With several
//! lockers per P a locker that queues instead of spinning pays a park and
//! a wake per lock, and the tasks stay spread over both Ps, each P's queue
//! keeping the rule on: measured at about twice the time per lock on
//! `mutex_contended` at procs 2 (BENCH_RESULTS.md, "Go's shapes: `main`
//! as a task, and the contended rows";
//! `bench/results/2026-11-27-mutex-canspin-rejected.txt`).
//!
//! Cancel-safe: a dropped future leaves nothing behind. A queued one
//! unlinks and uncounts itself, a woken one gives up the `WOKEN` role (and
//! wakes the next waiter if the mutex is free), and one that was handed the
//! mutex unlocks it, passing it on.
//!
//! [`SpinPolicy`]: crate::SpinPolicy

use super::clock;
use super::queue::{Notified, Waiter};
use super::state::{waiters, LOCKED, ONE_WAITER, STARVING, WOKEN};
use super::{Mutex, MutexGuard};
use crate::loom::Ordering::*;
use crate::sched::backoff::{Backoff, Snooze};
use crate::sched::task::meta::{blocked_on, Reason};
use crate::sync::update_waker;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Spin rounds a locker may spend before it queues, whatever the policy (the
/// "own budget" that ends an `Unbounded` wait; Go's `active_spin` is 4 rounds
/// of 30 `pause`s). Under loom a spin is a `yield_now`, which makes loom
/// run the other threads first and so hides the very interleavings in which
/// a locker queues behind a running owner; loom models therefore do not spin
/// (a locker still takes the `WOKEN` role before it queues).
const MAX_SPIN_ROUNDS: u32 = if cfg!(loom) { 0 } else { 8 };

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

impl<'a, T: ?Sized> LockFuture<'a, T> {
    /// A lock call that has not started.
    pub(super) fn new(mutex: &'a Mutex<T>) -> LockFuture<'a, T> {
        LockFuture {
            mutex,
            wait: Wait::Start,
            wait_start: None,
            starving: false,
            awoke: false,
        }
    }
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
                if crate::sched::task::coop::poll_proceed(cx).is_pending() {
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

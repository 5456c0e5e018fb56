//! The wait queue's entries, and the unlock that serves them (Go's
//! `Unlock` and `unlockSlow`).
//!
//! A queued lock call owns a [`Waiter`] in the mutex's `WaitList`. An
//! unlock that leaves waiters counted in the state word takes the queue
//! lock, decides again from the state it reads there, and pops the head: in
//! normal mode it wakes it to compete for the mutex (and sets `WOKEN`, so
//! that no other unlock wakes a second one), in starvation mode it sets
//! `LOCKED` on the head's behalf and hands the mutex over. Either way it
//! writes what it gave into the entry ([`Notified`]) instead of storing a
//! release anywhere, so a waiter that is cancelled before it runs knows
//! exactly what it must pass on (`lock.rs`, `Drop`). Why no release is ever
//! stored is under "Differences from Go" in `mod.rs`.

use super::clock;
use super::state::{waiters, wake_needed, LOCKED, ONE_WAITER, STARVING, WOKEN};
use super::Mutex;
use crate::loom::Ordering::*;
use std::task::Waker;

/// Why a queued waiter was unlinked from the queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Notified {
    /// Normal mode: woken to compete for the mutex; holds the `WOKEN` role.
    Woken,
    /// Starvation mode: `LOCKED` was set on the waiter's behalf; it owns the
    /// mutex.
    Handoff,
}

/// One queued `lock` call.
pub(super) struct Waiter {
    pub(super) waker: Option<Waker>,
    pub(super) notified: Option<Notified>,
    /// When this lock call first queued.
    pub(super) wait_start: clock::Stamp,
    /// Whether it had already waited past the threshold when it queued.
    pub(super) starving: bool,
}

impl<T: ?Sized> Mutex<T> {
    /// Releases the lock (Go's `Unlock`): one `fetch_sub`, then the slow path
    /// only if someone waits.
    pub(super) fn unlock(&self) {
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
    pub(super) fn unlock_slow(&self, seen: usize) {
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

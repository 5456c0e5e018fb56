//! The state word of a [`Mutex`](super::Mutex) (Go's `Mutex.state`):
//! everything a locker or an unlocker decides on, in one `usize`.
//!
//! One word is what makes the uncontended paths one atomic operation each (a
//! CAS to lock, a `fetch_sub` to unlock), and lets every slow-path decision
//! (spin? take the `WOKEN` role? queue? wake or hand off?) read all of the
//! mutex's state at once and act on it with one CAS, retrying if it changed.
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

pub(super) const LOCKED: usize = 1;
pub(super) const WOKEN: usize = 1 << 1;
pub(super) const STARVING: usize = 1 << 2;
const WAITER_SHIFT: u32 = 3;
pub(super) const ONE_WAITER: usize = 1 << WAITER_SHIFT;

pub(super) fn waiters(state: usize) -> usize {
    state >> WAITER_SHIFT
}

/// Whether an unlocked state needs the head waiter woken or handed the lock.
pub(super) fn wake_needed(state: usize) -> bool {
    state & LOCKED == 0 && waiters(state) != 0 && (state & STARVING != 0 || state & WOKEN == 0)
}

//! The timer state machine; the per-P timer queues it lives on are in
//! `timer_queue.rs` (seed 001).
//!
//! # Where timers live
//!
//! Each P owns a [`TimerQueue`]: a 4-ary heap under its own lock. A timer is
//! armed on the heap of the P that arms it, and that P's scheduler loop runs
//! its due timers in find-runnable, so in the common case the lock is
//! uncontended and a timer fires on the thread (and cache) that armed it.
//! Before seed 001, Go kept all timers in a few global heaps with a
//! dedicated timer goroutine; every arm and every fire crossed threads.
//! `Policy::timers = Global` restores that shape (one heap, one lock, checked
//! by every P) so the difference can be measured. How the scheduler runs the
//! queues is in `sched/timer/check.rs`.
//!
//! # Channel timers are on a heap only while someone waits (Go 1.23)
//!
//! A timer with a channel ([`Timer::new`], [`after`], [`Ticker`]) is put on a
//! heap only while a receiver is parked on its channel. Otherwise it is just
//! a deadline: the channel's receive paths call [`TimerInner::maybe_run_chan`]
//! first, which sends the value inline if the deadline has passed. So
//! `Timer::new(d)` followed by `stop()` never touches a heap, `after(1ns)`
//! followed by a receive is one lock round trip and no wake-up, and a timer
//! (or ticker) that nobody reads costs nothing. A receiver that parks calls
//! [`TimerInner::block_chan`] (which puts the timer on the current P's heap)
//! and, when it stops waiting, [`TimerInner::unblock_chan`] (the last one
//! turns the entry into a zombie). The channel owns its timer; the timer
//! points back at the channel through a pointer the channel clears, under
//! the timer lock, when it is dropped.
//!
//! [`Timer::new`]: crate::time::Timer::new
//! [`after`]: crate::time::after
//! [`Ticker`]: crate::time::Ticker
//!
//! # The state machine
//!
//! A timer's state sits under its own small mutex: the deadline `when`
//! (`0` = not armed), the sequence number of its live heap entry, which queue
//! holds that entry, and the action. Lock order is *queue, then timer, then
//! channel*; arming takes the timer lock alone, then (only when a new heap
//! entry is needed) the queue lock followed by the timer lock again. The
//! channel code calls into the timer only with no channel lock held.
//!
//! Stop and reset are O(1) and never touch another P's heap (Go 1.23's lazy
//! scheme):
//!
//! * `stop` clears `when`. The heap entry stays as a *zombie* until it
//!   reaches the top or until zombies pass a quarter of the heap and the
//!   next push or run sweeps them.
//! * `reset` to a time no earlier than the live entry just moves `when`; the
//!   entry surfaces at the old time, sees the later `when`, and is re-pushed
//!   (lazy modification). Only a reset to an *earlier* time pushes a new
//!   entry (on the current P) and leaves the old one a zombie.
//! * A sleep dropped before it fires is not stopped: its timer, waker
//!   forgotten, becomes its queue's spare, and the next sleep re-arms it
//!   as a reset would (`Sched::start_sleep` in `timers.rs`).
//!
//! An entry is live iff its `seq` is the timer's `live` sequence number
//! (each orphaning bumps `seq`, so no two entries of one timer in any heaps
//! are ever live); everything else is a zombie and is dropped when popped.
//! `live` is an atomic mirror of that fact, so a sweep decides without
//! locking any timer.
//!
//! Go 1.23's channel rule holds: a timer's channel send happens under the
//! timer lock, and `stop`/`reset` drain the channel under the same lock, so
//! after either returns no stale value can be received.
//!
//! # Rejected
//!
//! - Eager channel timers (on a heap from `Timer::new` on, the first
//!   version): every `Timer::new`+`stop` paid a heap push and a zombie, and
//!   `after`+receive a park and a wake; Go 1.23 dropped that for the same
//!   reason.
//! - The callback in an `Arc<dyn Fn>` cloned out on every fire: the timer
//!   itself is already shared, so the callback lives in it, fixed at
//!   creation and called without the lock.

pub(crate) mod check;
pub(crate) mod clock;
pub(crate) mod heap;
pub(crate) mod queue;
pub(crate) mod sleep;

use crate::loom::Unpoison;
use crate::loom::{AtomicU64, Mutex, MutexGuard, Ordering};
use queue::TimerQueue;
use std::sync::{Arc, Weak};
use std::task::Waker;
use std::time::Instant;

pub(crate) use clock::NEVER;

/// `live` when the timer has no heap entry.
pub(super) const NO_ENTRY: u64 = u64::MAX;

/// What a timer does when it fires.
pub(crate) enum Action {
    /// Wake a task (sleep, timeout, deadlines).
    Wake(Option<Waker>),
    /// Send the fire time on the timer's channel (`Timer::rx`, `Ticker::rx`,
    /// `after`); dropped if the channel is full.
    Chan(ChanTimer),
    /// Run the timer's function: as its own task (`after_func`) or inline
    /// (internal callbacks such as context cancellation, which never block).
    Func { spawn: bool },
}

/// What the timer core needs of the channel a channel timer sends on: the
/// hook by which the scheduler layer sends without knowing channels
/// (`chan` implements it for its channel of `Instant`s).
pub(crate) trait TimerChan: Sync {
    /// Sends `at` if the channel has room (a one-slot buffer: a value that
    /// does not fit is dropped, as Go's timer channels do).
    fn send_tick(&self, at: Instant) -> Tick;
    /// Takes every buffered value; whether there was one.
    fn drain(&self) -> bool;
}

/// What [`TimerChan::send_tick`] did with a tick.
pub(crate) enum Tick {
    /// Handed over, to the buffer or to a parked receiver, which is then
    /// the waker to wake.
    Sent(Option<Waker>),
    /// Dropped: the buffer was full.
    Dropped,
}

/// What [`TimerInner::set`] found and left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SetOutcome {
    /// The timer was pending: armed, or with an undelivered value that the
    /// call drained (Go 1.23's count, what `Stop` and `Reset` return).
    pub(crate) was_pending: bool,
    /// It now needs a heap entry that it lacks: the caller pushes it
    /// ([`push`](queue::push)).
    pub(crate) needs_push: bool,
}

/// A channel timer's link to its channel.
pub(crate) struct ChanTimer {
    /// The channel that owns this timer; null before [`TimerInner::attach_chan`]
    /// and after the channel is dropped ([`TimerInner::detach_chan`]).
    chan: Option<*const dyn TimerChan>,
    /// Receivers parked on the channel (Go's `blocked`).
    blocked: u32,
    /// Whether a value was sent since the last drain. Only the timer sends
    /// on its channel, always under the timer lock, so while this is false
    /// the channel holds nothing of ours and `stop`/`reset` skip the
    /// channel lock (most resets come before the timer fires).
    sent: bool,
}

// SAFETY: the pointer is only dereferenced under the timer lock while it is
// non-null, and the channel nulls it under that lock before it is freed.
unsafe impl Send for ChanTimer {}

impl ChanTimer {
    fn chan(&self) -> Option<&dyn TimerChan> {
        // SAFETY: called under the timer lock (we are inside its `TState`);
        // a set pointer is a channel whose drop has not yet passed
        // `detach_chan`, which needs this lock, so it is alive.
        self.chan.map(|c| unsafe { &*c })
    }

    /// Sends `at` (dropped if the one-slot buffer is full); the receiver to
    /// wake, if one was handed the value.
    fn send(&mut self, at: Instant) -> Option<Waker> {
        match self.chan()?.send_tick(at) {
            Tick::Sent(wake) => {
                // Also when the value went straight to a parked receiver: if
                // that receive is cancelled, the value goes back into the
                // buffer.
                self.sent = true;
                wake
            }
            Tick::Dropped => None,
        }
    }

    /// Takes every buffered value; whether there was one.
    fn drain(&mut self) -> bool {
        if !std::mem::take(&mut self.sent) {
            return false;
        }
        self.chan().is_some_and(|c| c.drain())
    }
}

pub(crate) struct TState {
    /// Deadline on the timer clock; 0 when not armed.
    pub(crate) when: u64,
    /// Period for tickers (0: one-shot).
    pub(crate) period: u64,
    /// Sequence number of the live heap entry (or of the next one).
    pub(super) seq: u64,
    /// The queue holding the live entry, and the entry's deadline.
    pub(crate) entry: Option<(Arc<TimerQueue>, u64)>,
    pub(crate) action: Action,
}

impl TState {
    /// Whether the timer must be on a heap to fire: an armed timer, except a
    /// channel timer with nobody waiting (its receivers run it).
    pub(super) fn needs_heap(&self) -> bool {
        self.when != 0
            && self.when != NEVER
            && match &self.action {
                Action::Chan(c) => c.blocked > 0,
                _ => true,
            }
    }
}

/// What an `after_func` or internal timer calls when it fires.
pub(crate) enum Callback {
    /// Nothing (sleep and channel timers).
    None,
    /// A user's `after_func` closure.
    Boxed(Box<dyn Fn() + Send + Sync>),
    /// An object the timer must not keep alive (a context's deadline),
    /// called if it still exists. A `Weak` to the object itself, not a
    /// closure around one: no allocation of its own, which matters when a
    /// server makes a context per request.
    Weak(Weak<dyn Fire>),
}

/// An object a [`Callback::Weak`] timer calls.
pub(crate) trait Fire: Send + Sync {
    fn fire(self: Arc<Self>);
}

/// A timer, shared by its handle and the heap entries that point to it.
pub(crate) struct TimerInner {
    state: Mutex<TState>,
    /// `seq` of the live heap entry, `NO_ENTRY` if none (see module docs).
    pub(super) live: AtomicU64,
    /// `after_func`'s function and internal callbacks; fixed at creation.
    func: Callback,
    /// The queue it was made on: its runtime, for arming from a thread that
    /// belongs to none.
    pub(crate) home: Arc<TimerQueue>,
}

/// What firing produced, to be run after the locks are released.
pub(crate) enum Fired {
    Wake(Waker),
    Func(Arc<TimerInner>, bool),
}

impl TimerInner {
    pub(crate) fn new(action: Action, func: Callback, home: Arc<TimerQueue>) -> Arc<TimerInner> {
        TimerInner::new_at(action, func, home, 0)
    }

    /// A one-shot timer whose deadline is `when` from the start (`0`: not
    /// armed); it still needs [`push`](queue::push) for its heap entry. Saves a `set`
    /// (a lock round trip) on paths that arm right away, such as `sleep`.
    pub(crate) fn new_at(
        action: Action,
        func: Callback,
        home: Arc<TimerQueue>,
        when: u64,
    ) -> Arc<TimerInner> {
        Arc::new(TimerInner {
            state: Mutex::new(TState {
                when,
                period: 0,
                seq: 0,
                entry: None,
                action,
            }),
            live: AtomicU64::new(NO_ENTRY),
            func,
            home,
        })
    }

    /// A channel timer, not yet attached to its channel.
    pub(crate) fn for_chan(home: Arc<TimerQueue>) -> Arc<TimerInner> {
        TimerInner::new(
            Action::Chan(ChanTimer {
                chan: None,
                blocked: 0,
                sent: false,
            }),
            Callback::None,
            home,
        )
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, TState> {
        self.state.lock().unpoison()
    }

    /// Calls the function of an `after_func` or internal timer.
    pub(crate) fn call(&self) {
        match &self.func {
            Callback::None => {}
            Callback::Boxed(f) => f(),
            Callback::Weak(w) => {
                if let Some(o) = w.upgrade() {
                    o.fire();
                }
            }
        }
    }

    /// Whether a call to stop now would find the timer armed.
    pub(crate) fn is_armed(&self) -> bool {
        self.lock().when != 0
    }

    /// Turns the live entry, if any, into a zombie of its queue.
    pub(super) fn orphan_entry(&self, st: &mut TState) {
        if let Some((q, _)) = st.entry.take() {
            st.seq += 1;
            // Counted before it is visible as a zombie: a sweep that sees
            // `live` change (Acquire) then finds the count already raised, so
            // its decrement never undercounts and the count stays exact.
            q.zombies.fetch_add(1, Ordering::Relaxed);
            self.live.store(NO_ENTRY, Ordering::Release);
        }
    }

    /// Sets the deadline (`0`: stop) and period.
    pub(crate) fn set(&self, when: u64, period: u64) -> SetOutcome {
        let mut st = self.lock();
        let mut pending = st.when != 0;
        if let Action::Chan(c) = &mut st.action {
            pending |= c.drain();
        }
        st.when = when;
        st.period = period;
        if !st.needs_heap() {
            // Stopped, never, or a channel timer nobody waits on (whose
            // entry, if any, was orphaned by its last receiver).
            if when == 0 || when == NEVER {
                self.orphan_entry(&mut st);
            }
            return SetOutcome {
                was_pending: pending,
                needs_push: false,
            };
        }
        let lazy = matches!(st.entry, Some((_, w)) if w <= when);
        SetOutcome {
            was_pending: pending,
            needs_push: !lazy,
        }
    }

    /// Readies a spare sleep timer for a new sleep: wake `waker` at `when`.
    /// Returns whether it needs a heap entry: not when its old entry is
    /// still live and due no later, which then surfaces, finds the later
    /// deadline and moves (the lazy reset above).
    pub(crate) fn rearm_sleep(&self, waker: Waker, when: u64) -> bool {
        let mut st = self.lock();
        let old = std::mem::replace(&mut st.action, Action::Wake(Some(waker)));
        st.when = when;
        let needs_push = !matches!(st.entry, Some((_, w)) if w <= when);
        drop(st);
        drop(old); // a waker's drop may run task code: not under the lock
        needs_push
    }

    /// Forgets a finished sleep's waker, so that the timer, kept as a
    /// spare while still armed, wakes nobody if it fires before its reuse.
    /// Whether it was still armed.
    pub(crate) fn forget_waker(&self) -> bool {
        let mut st = self.lock();
        let waker = match &mut st.action {
            Action::Wake(w) => w.take(),
            _ => None,
        };
        let armed = st.when != 0;
        drop(st);
        drop(waker);
        armed
    }

    /// Binds a channel timer to its channel (once, right after both exist).
    ///
    /// # Safety
    /// `chan` must call [`TimerInner::detach_chan`] before it is freed.
    pub(crate) unsafe fn attach_chan(&self, chan: &(dyn TimerChan + 'static)) {
        if let Action::Chan(c) = &mut self.lock().action {
            c.chan = Some(chan);
        }
    }

    /// The channel is being dropped: forget it and stop.
    pub(crate) fn detach_chan(&self) {
        let mut st = self.lock();
        if let Action::Chan(c) = &mut st.action {
            c.chan = None;
        }
        st.when = 0;
        self.orphan_entry(&mut st);
    }

    /// Go's `maybeRunChan`: a receiver is about to look at the channel; if
    /// the timer is due and no heap is in charge of it, send now.
    pub(crate) fn maybe_run_chan(&self) {
        // Relaxed: a stale "heaped" only means the heap sends a moment
        // later; a stale "not heaped" is re-checked under the lock.
        if self.live.load(Ordering::Relaxed) != NO_ENTRY {
            return;
        }
        let mut st = self.lock();
        if st.entry.is_some() || st.when == 0 || st.when == NEVER {
            return;
        }
        let now = clock::now();
        if st.when > now {
            return;
        }
        let woken = self.fire_locked(&mut st, now);
        drop(st);
        if let Some(Fired::Wake(w)) = woken {
            w.wake();
        }
    }

    /// Go's `blockTimerChan`: a receiver parked on the channel. Returns
    /// whether the timer now needs a heap entry (the caller pushes it).
    pub(crate) fn block_chan(&self) -> bool {
        let mut st = self.lock();
        let Action::Chan(c) = &mut st.action else {
            return false;
        };
        c.blocked += 1;
        st.needs_heap() && st.entry.is_none()
    }

    /// Go's `unblockTimerChan`: a receiver stopped waiting; the last one
    /// leaves the heap entry as a zombie (the deadline stays armed).
    pub(crate) fn unblock_chan(&self) {
        let mut st = self.lock();
        let Action::Chan(c) = &mut st.action else {
            return;
        };
        c.blocked -= 1;
        if c.blocked == 0 {
            self.orphan_entry(&mut st);
        }
    }

    /// Fires a due timer (`st.when <= now`): advances a ticker or disarms,
    /// and does or returns the action. The heap entry is the caller's.
    pub(super) fn fire_locked(&self, st: &mut TState, now: u64) -> Option<Fired> {
        let at = clock::instant_of(st.when);
        if st.period > 0 {
            // A ticker: the next tick one period after the missed ones.
            let behind = now - st.when;
            st.when = st
                .when
                .saturating_add(st.period.saturating_mul(1 + behind / st.period))
                .min(NEVER - 1);
        } else {
            st.when = 0;
        }
        match &mut st.action {
            Action::Wake(w) => w.take().map(Fired::Wake),
            // Under the timer lock, as stop/reset drain under it.
            Action::Chan(c) => c.send(at).map(Fired::Wake),
            Action::Func { .. } => None, // the caller has the Arc
        }
    }
}

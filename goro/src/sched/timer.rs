//! The timer state machine and the per-P timer queues (seed 001).
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
//! queues is in `sched/timers.rs`.
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

use crate::loom::Unpoison;
use crate::loom::{AtomicU64, AtomicUsize, Mutex, MutexGuard, Ordering};
use crate::sched::clock;
use crate::sched::timer_heap::Heap;
use crate::sched::Sched;
use std::sync::{Arc, Weak};
use std::task::Waker;
use std::time::Instant;

pub(crate) use clock::NEVER;

/// `live` when the timer has no heap entry.
const NO_ENTRY: u64 = u64::MAX;

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
    /// does not fit is dropped, as Go's timer channels do). `Some` when the
    /// value was handed over, with the parked receiver to wake if any.
    fn send_tick(&self, at: Instant) -> Option<Option<Waker>>;
    /// Takes every buffered value; whether there was one.
    fn drain(&self) -> bool;
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
        let sent = self.chan()?.send_tick(at);
        // Also when the value went straight to a parked receiver: if that
        // receive is cancelled, the value goes back into the buffer.
        self.sent |= sent.is_some();
        sent.flatten()
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
    seq: u64,
    /// The queue holding the live entry, and the entry's deadline.
    pub(crate) entry: Option<(Arc<TimerQueue>, u64)>,
    pub(crate) action: Action,
}

impl TState {
    /// Whether the timer must be on a heap to fire: an armed timer, except a
    /// channel timer with nobody waiting (its receivers run it).
    fn needs_heap(&self) -> bool {
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
    live: AtomicU64,
    /// `after_func`'s function and internal callbacks; fixed at creation.
    func: Callback,
    /// The queue it was made on: its runtime, for arming from a thread that
    /// belongs to none.
    pub(crate) home: Arc<TimerQueue>,
}

struct HeapItem {
    timer: Arc<TimerInner>,
    seq: u64,
}

/// One heap of timers (a P's, or the global one) with its lock.
pub(crate) struct TimerQueue {
    heap: Mutex<Heap<HeapItem>>,
    /// Earliest deadline in the heap (zombies included), `NEVER` if empty;
    /// read without the lock by the scheduler loop.
    next: AtomicU64,
    /// Entries orphaned by stop/reset and not yet removed. Exact: an
    /// orphaning counts itself before a sweep can see the entry dead.
    pub(crate) zombies: AtomicUsize,
    /// Heap entries, live and zombie.
    len: AtomicUsize,
    /// The runtime the queue belongs to.
    pub(crate) sched: Weak<Sched>,
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
    /// armed); it still needs [`push`] for its heap entry. Saves a `set`
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
    fn orphan_entry(&self, st: &mut TState) {
        if let Some((q, _)) = st.entry.take() {
            st.seq += 1;
            // Counted before it is visible as a zombie: a sweep that sees
            // `live` change (Acquire) then finds the count already raised, so
            // its decrement never undercounts and the count stays exact.
            q.zombies.fetch_add(1, Ordering::Relaxed);
            self.live.store(NO_ENTRY, Ordering::Release);
        }
    }

    /// Sets the deadline (`0`: stop) and period. Returns whether the timer
    /// was pending (armed, or with an undelivered value that this call
    /// drained, as Go 1.23 counts it) and whether it now needs a heap entry
    /// that it lacks (the caller then calls [`push`]).
    pub(crate) fn set(&self, when: u64, period: u64) -> (bool, bool) {
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
            return (pending, false);
        }
        let lazy = matches!(st.entry, Some((_, w)) if w <= when);
        (pending, !lazy)
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
    fn fire_locked(&self, st: &mut TState, now: u64) -> Option<Fired> {
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

impl TimerQueue {
    pub(crate) fn new(sched: Weak<Sched>) -> Arc<TimerQueue> {
        Arc::new(TimerQueue {
            heap: Mutex::new(Heap::default()),
            next: AtomicU64::new(NEVER),
            zombies: AtomicUsize::new(0),
            len: AtomicUsize::new(0),
            sched,
        })
    }

    /// The earliest deadline (maybe a zombie's), without locking.
    pub(crate) fn next_when(&self) -> u64 {
        // Acquire: pairs with the Release in `publish`.
        self.next.load(Ordering::Acquire)
    }

    /// Number of heap entries (live and zombie).
    pub(crate) fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    fn heap(&self) -> MutexGuard<'_, Heap<HeapItem>> {
        self.heap.lock().unpoison()
    }

    fn publish(&self, heap: &Heap<HeapItem>) {
        self.len.store(heap.len(), Ordering::Relaxed);
        // Release: a reader that sees this deadline then locks the heap.
        self.next
            .store(heap.peek_when().unwrap_or(NEVER), Ordering::Release);
    }

    /// Drops zombies from the end of the array and from the top (Go's
    /// `cleanHead`) and sweeps the whole heap when they pass a quarter of
    /// it, deciding each entry from its timer's `live` word without taking
    /// the timer's lock.
    ///
    /// The end matters as much as the top: a timer armed far out and
    /// stopped soon after (a context's deadline, a connection's idle
    /// timeout) is a leaf at the end of the array when it is stopped, and
    /// removing a leaf needs no sift. Without it such zombies pile up until
    /// a sweep, which touches every timer in the heap (a cache miss each).
    fn clean(&self, heap: &mut Heap<HeapItem>) {
        // Acquire: pairs with the Release stores of `live`, so the zombie
        // count includes every entry this sees dead (see `orphan_entry`).
        let is_live = |e: &HeapItem| e.timer.live.load(Ordering::Acquire) == e.seq;
        let mut removed = 0;
        loop {
            if heap.last().is_some_and(|e| !is_live(e)) {
                heap.pop_last();
            } else if heap.peek().is_some_and(|e| !is_live(e)) {
                heap.pop();
            } else {
                break;
            }
            removed += 1;
        }
        let z = self.zombies.load(Ordering::Relaxed).saturating_sub(removed);
        if z > 0 && z * 4 > heap.len() {
            heap.retain(|e| {
                let keep = is_live(e);
                removed += usize::from(!keep);
                keep
            });
        }
        if removed > 0 {
            let _ = self
                .zombies
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |z| {
                    Some(z.saturating_sub(removed))
                });
        }
    }
}

/// Makes sure `t` has a heap entry no later than its deadline if it needs
/// one, pushing onto `q`. Returns the deadline if the new entry became `q`'s
/// earliest, so the caller may have to wake a thread sleeping until later.
pub(crate) fn push(q: &Arc<TimerQueue>, t: &Arc<TimerInner>) -> Option<u64> {
    let mut heap = q.heap();
    let mut st = t.lock();
    // Re-checked under the locks: a concurrent stop/reset/fire may have done
    // the bookkeeping already.
    if !st.needs_heap() || matches!(st.entry, Some((_, w)) if w <= st.when) {
        return None;
    }
    t.orphan_entry(&mut st);
    let when = st.when;
    st.entry = Some((q.clone(), when));
    // Release: a sweep that sees the new seq also sees the count raised by
    // the `orphan_entry` above (readers re-check "live" under a lock).
    t.live.store(st.seq, Ordering::Release);
    let seq = st.seq;
    drop(st);
    let new_head = heap.peek_when().is_none_or(|w| when < w);
    heap.push(
        when,
        HeapItem {
            timer: t.clone(),
            seq,
        },
    );
    q.clean(&mut heap);
    q.publish(&heap);
    new_head.then_some(when)
}

impl TimerQueue {
    /// Runs every timer due at `now`, appending what must happen once the
    /// locks are released (wakes, callbacks). Any thread may call it: the
    /// owner, or a thief. Returns how many fired.
    pub(crate) fn run(&self, now: u64, out: &mut Vec<Fired>) -> usize {
        if self.next_when() > now {
            return 0;
        }
        let mut heap = self.heap();
        let mut fired = 0;
        while heap.peek_when().is_some_and(|w| w <= now) {
            let (_, e) = heap.pop().expect("peeked");
            let t = e.timer;
            let mut st = t.lock();
            if st.entry.is_none() || st.seq != e.seq {
                let _ = self
                    .zombies
                    .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |z| {
                        Some(z.saturating_sub(1))
                    });
                continue;
            }
            if st.when > now {
                // Reset to later: move the entry (lazy modification).
                let w = st.when;
                let seq = st.seq;
                if let Some(entry) = st.entry.as_mut() {
                    entry.1 = w;
                }
                drop(st);
                heap.push(w, HeapItem { timer: t, seq });
                continue;
            }
            fired += 1;
            let action = t.fire_locked(&mut st, now);
            if st.needs_heap() {
                // A ticker that someone waits on: its next tick.
                let (w, seq) = (st.when, st.seq);
                if let Some(entry) = st.entry.as_mut() {
                    entry.1 = w;
                }
                heap.push(
                    w,
                    HeapItem {
                        timer: t.clone(),
                        seq,
                    },
                );
            } else {
                st.entry = None;
                t.live.store(NO_ENTRY, Ordering::Relaxed);
            }
            let spawn = match &st.action {
                Action::Func { spawn } => Some(*spawn),
                _ => None,
            };
            drop(st);
            match (action, spawn) {
                (Some(a), _) => out.push(a),
                (None, Some(spawn)) => out.push(Fired::Func(t, spawn)),
                (None, None) => {}
            }
        }
        self.clean(&mut heap);
        self.publish(&heap);
        fired
    }

    /// Removes every entry and returns the timers whose entry was live,
    /// now without an entry, for the caller to [`push`] onto another queue
    /// (a P removed by a resize, `sched/resize.rs`; Go's `moveTimers`).
    /// Zombies are dropped. Until the caller's push, a timer is armed with
    /// no entry: a `reset` meanwhile pushes one itself (and the caller's
    /// push then finds it and does nothing), a `stop` clears `when` (and
    /// the push does nothing), a receiver's `maybe_run_chan` fires it
    /// inline. So each timer keeps one live entry or fires once.
    pub(crate) fn take_live(&self) -> Vec<Arc<TimerInner>> {
        // No look at `len` first: a relaxed read outside the lock may miss
        // a push that an armer made just before its re-check of `procs`
        // (the loom model `loom_resize_shrink_keeps_a_timer_armed_meanwhile`
        // caught that shortcut). Retires are rare; the lock is cheap.
        let mut heap = self.heap();
        let (mut out, mut dead) = (Vec::new(), Vec::new());
        for e in heap.drain() {
            let t = e.timer;
            let mut st = t.lock();
            let live = st.entry.is_some() && st.seq == e.seq;
            if live {
                st.entry = None;
                t.live.store(NO_ENTRY, Ordering::Release);
            }
            drop(st);
            if live {
                out.push(t)
            } else {
                dead.push(t)
            }
        }
        self.zombies.store(0, Ordering::Relaxed);
        self.publish(&heap);
        drop(heap);
        drop(dead); // maybe the last reference: no user drop under the lock
        out
    }

    /// Removes every entry (shutdown); the timers are dropped by the caller
    /// outside the lock.
    pub(crate) fn drain(&self) -> Vec<Arc<TimerInner>> {
        let mut heap = self.heap();
        let out: Vec<_> = heap.drain().map(|e| e.timer).collect();
        self.zombies.store(0, Ordering::Relaxed);
        self.publish(&heap);
        drop(heap);
        for t in &out {
            let mut st = t.lock();
            st.entry = None;
            t.live.store(NO_ENTRY, Ordering::Relaxed);
        }
        out
    }
}

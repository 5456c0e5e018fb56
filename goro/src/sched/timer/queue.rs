//! A heap of timers with its lock: one per P, or the single global one
//! under `TimerPlacement::Global` (seed 001). Pushing an entry, running
//! what is due, sweeping zombies and handing a removed P's live timers to
//! another queue; the timer each entry points to, and the lazy stop and
//! reset that make entries zombies, are in `timer.rs`.

use super::heap::Heap;
use super::{Action, Fired, TimerInner, NEVER, NO_ENTRY};
use crate::loom::Unpoison;
use crate::loom::{AtomicBool, AtomicU64, AtomicUsize, Mutex, MutexGuard, Ordering};
use crate::sched::Sched;
use std::sync::{Arc, Weak};

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
    /// The timer of a sleep dropped before it fired, kept for the next
    /// sleep armed here
    /// (`Sched::start_sleep`, `timers.rs`).
    spare: Mutex<Option<Arc<TimerInner>>>,
    /// Whether `spare` holds one: read without the lock, so that a sleep
    /// on a P without a spare (every sleep of a `sleep` loop: a fired
    /// timer is not kept) pays no lock round trip. A stale read only
    /// misses a reuse or takes the lock for nothing.
    has_spare: AtomicBool,
}

impl TimerQueue {
    pub(crate) fn new(sched: Weak<Sched>) -> Arc<TimerQueue> {
        Arc::new(TimerQueue {
            heap: Mutex::new(Heap::default()),
            next: AtomicU64::new(NEVER),
            zombies: AtomicUsize::new(0),
            len: AtomicUsize::new(0),
            sched,
            spare: Mutex::new(None),
            has_spare: AtomicBool::new(false),
        })
    }

    /// Takes the spare sleep timer, if any.
    pub(crate) fn take_spare(&self) -> Option<Arc<TimerInner>> {
        // Relaxed: a hint (see `has_spare`); the slot is read under its lock.
        if !self.has_spare.load(Ordering::Relaxed) {
            return None;
        }
        self.take_spare_locked()
    }

    /// Takes the spare under its lock, whatever the hint says.
    fn take_spare_locked(&self) -> Option<Arc<TimerInner>> {
        let mut spare = self.spare.lock().unpoison();
        self.has_spare.store(false, Ordering::Relaxed);
        spare.take()
    }

    /// Keeps `t` as the spare; returns the one it displaces.
    pub(crate) fn put_spare(&self, t: Arc<TimerInner>) -> Option<Arc<TimerInner>> {
        let mut spare = self.spare.lock().unpoison();
        self.has_spare.store(true, Ordering::Relaxed);
        spare.replace(t)
    }

    /// Stops the spare timer and sweeps every zombie, so that `len` counts
    /// live entries only (the deadlock check, which runs while everything
    /// is idle).
    pub(crate) fn settle(&self) {
        if let Some(t) = self.take_spare_locked() {
            let _ = t.set(0, 0);
        }
        let mut heap = self.heap();
        let removed = sweep(&mut heap);
        self.forget_zombies(removed);
        self.publish(&heap);
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
            removed += sweep(heap);
        }
        self.forget_zombies(removed);
    }

    /// Takes `removed` zombies off the count.
    fn forget_zombies(&self, removed: usize) {
        if removed > 0 {
            let _ = self
                .zombies
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |z| {
                    Some(z.saturating_sub(removed))
                });
        }
    }
}

/// Whether `e` is its timer's live entry, decided without the timer's lock.
fn is_live(e: &HeapItem) -> bool {
    // Acquire: pairs with the Release stores of `live`, so the zombie count
    // includes every entry this sees dead (see `orphan_entry`).
    e.timer.live.load(Ordering::Acquire) == e.seq
}

/// Removes every zombie from `heap`; how many.
fn sweep(heap: &mut Heap<HeapItem>) -> usize {
    let mut removed = 0;
    heap.retain(|e| {
        let keep = is_live(e);
        removed += usize::from(!keep);
        keep
    });
    removed
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
    #[inline(always)]
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
    /// (a P removed by a resize, `sched/processor/resize.rs`; Go's `moveTimers`).
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
        // Under the lock, not by the hint: a spare left here would keep its
        // queue alive (the timer holds its home queue).
        let spare = self.take_spare_locked();
        let mut heap = self.heap();
        let mut out: Vec<_> = heap.drain().map(|e| e.timer).collect();
        out.extend(spare);
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

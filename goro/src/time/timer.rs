//! The timer state machine and the per-P timer queues (seed 001).
//!
//! # Where timers live
//!
//! Each P owns a [`TimerQueue`]: a 4-ary heap under its own lock. A timer is
//! armed on the heap of the P that arms it, and that P's scheduler loop runs
//! its due timers at the top of find-runnable, so in the common case the
//! lock is uncontended and a timer fires on the thread (and cache) that
//! armed it. Before seed 001, Go kept all timers in a few global heaps with
//! a dedicated timer goroutine; every arm and every fire crossed threads.
//! `Policy::timers = Global` restores that shape (one heap, one lock, checked
//! by every P) so the difference can be measured.
//!
//! A P with no work gives its P back; its timers are then run by thieves on
//! their last steal pass (the timer mask says which idle Ps have timers),
//! and one parked thread sleeps until the earliest timer of all Ps so that a
//! timer fires on time even when every P is idle (see `sched::find`).
//!
//! # The state machine
//!
//! A timer's state sits under its own small mutex: the deadline `when`
//! (`0` = not armed), the sequence number of its live heap entry, which queue
//! holds that entry, and the action. Lock order is always *queue, then
//! timer*; arming takes the timer lock alone, then (only when a new heap
//! entry is needed) the queue lock followed by the timer lock again.
//!
//! Stop and reset are O(1) and never touch another P's heap (Go 1.23's lazy
//! scheme):
//!
//! * `stop` clears `when`. The heap entry stays as a *zombie* until it
//!   reaches the top or until zombies pass a quarter of the heap and the
//!   owner sweeps them.
//! * `reset` to a time no earlier than the live entry just moves `when`; the
//!   entry surfaces at the old time, sees the later `when`, and is re-pushed
//!   (lazy modification). Only a reset to an *earlier* time pushes a new
//!   entry (on the current P) and leaves the old one a zombie.
//!
//! An entry is live iff its `seq` and queue match the timer's; everything
//! else is a zombie and is dropped when popped.
//!
//! Go 1.23's channel rule holds: a timer's channel send happens under the
//! timer lock, and `stop`/`reset` drain the channel under the same lock, so
//! after either returns no stale value can be received.

use crate::chan::{Receiver, Sender};
use crate::loom::{AtomicU64, AtomicUsize, Mutex, MutexGuard, Ordering};
use crate::time::heap::Heap;
use std::sync::Arc;
use std::task::Waker;
use std::time::Instant;

/// "Never": a deadline too far to represent, or no timer at all.
pub(crate) const NEVER: u64 = u64::MAX;

/// What a timer does when it fires.
pub(crate) enum Action {
    /// Wake a task (sleep, timeout, deadlines).
    Wake(Option<Waker>),
    /// Send the fire time on a channel of capacity 1; dropped if full
    /// (`Timer::rx`, `Ticker::rx`, `after`). The receiver is kept to drain
    /// stale values on stop/reset.
    Send(Sender<Instant>, Receiver<Instant>),
    /// Run a function: as its own task (`after_func`) or inline (internal
    /// callbacks such as context cancellation, which never block).
    Func {
        f: Arc<dyn Fn() + Send + Sync>,
        spawn: bool,
    },
}

pub(crate) struct TState {
    /// Deadline in runtime nanoseconds; 0 when not armed.
    pub(crate) when: u64,
    /// Period for tickers (0: one-shot).
    pub(crate) period: u64,
    /// Sequence number of the live heap entry.
    seq: u64,
    /// The queue holding the live entry, and the entry's deadline.
    entry: Option<(Arc<TimerQueue>, u64)>,
    pub(crate) action: Action,
}

impl TState {
    fn is_live(&self, q: &TimerQueue, seq: u64, when: u64) -> bool {
        self.seq == seq
            && matches!(&self.entry, Some((eq, w)) if std::ptr::eq(&**eq, q) && *w == when)
    }

    /// Turns the live entry, if any, into a zombie of its queue.
    fn orphan_entry(&mut self) {
        if let Some((q, _)) = self.entry.take() {
            self.seq += 1;
            q.zombies.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// A timer, shared by its handle and the heap entries that point to it.
pub(crate) struct TimerInner {
    state: Mutex<TState>,
}

pub(crate) struct HeapItem {
    timer: Arc<TimerInner>,
    seq: u64,
}

/// One heap of timers (a P's, or the global one) with its lock.
pub(crate) struct TimerQueue {
    heap: Mutex<Heap<HeapItem>>,
    /// Earliest deadline in the heap (zombies included), `NEVER` if empty;
    /// read without the lock by the scheduler loop.
    next: AtomicU64,
    /// Entries orphaned by stop/reset and not yet removed.
    zombies: AtomicUsize,
    /// Heap entries, live and zombie.
    len: AtomicUsize,
}

/// What firing produced, to be run after the locks are released.
pub(crate) enum Fired {
    Wake(Waker),
    Func(Arc<dyn Fn() + Send + Sync>, bool),
}

impl TimerInner {
    pub(crate) fn new(action: Action) -> Arc<TimerInner> {
        Arc::new(TimerInner {
            state: Mutex::new(TState {
                when: 0,
                period: 0,
                seq: 0,
                entry: None,
                action,
            }),
        })
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, TState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Stops the timer: returns whether it was armed (this call prevented a
    /// fire). O(1): the heap entry stays behind as a zombie.
    pub(crate) fn stop(&self) -> bool {
        let mut st = self.lock();
        let was = st.when != 0;
        st.when = 0;
        st.orphan_entry();
        drain_stale(&st.action);
        was
    }
}

/// Go 1.23: after stop/reset returns, no value sent before it is received.
fn drain_stale(a: &Action) {
    if let Action::Send(_, rx) = a {
        while rx.try_recv().is_ok() {}
    }
}

impl TimerQueue {
    pub(crate) fn new() -> Arc<TimerQueue> {
        Arc::new(TimerQueue {
            heap: Mutex::new(Heap::default()),
            next: AtomicU64::new(NEVER),
            zombies: AtomicUsize::new(0),
            len: AtomicUsize::new(0),
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
        self.heap.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn publish(&self, heap: &Heap<HeapItem>) {
        self.len.store(heap.len(), Ordering::Relaxed);
        // Release: a reader that sees this deadline then locks the heap.
        self.next
            .store(heap.peek_when().unwrap_or(NEVER), Ordering::Release);
    }
}

/// Arms (or re-arms) `t` for `when` (`period` for tickers), using queue `q`
/// if a new heap entry is needed. Returns true if one was pushed, so the
/// caller may have to wake a thread sleeping until a later deadline.
pub(crate) fn arm(q: &Arc<TimerQueue>, t: &Arc<TimerInner>, when: u64, period: u64) -> bool {
    {
        let mut st = t.lock();
        drain_stale(&st.action);
        st.when = when;
        st.period = period;
        if when == NEVER {
            st.orphan_entry(); // armed, but can never fire: no entry
            return false;
        }
        if let Some((_, entry_when)) = st.entry {
            if entry_when <= when {
                return false; // lazy modification: the old entry surfaces first
            }
        }
    }
    let mut heap = q.heap();
    let mut st = t.lock();
    if st.when != when {
        return false; // a concurrent stop/reset overtook us and did its own bookkeeping
    }
    if matches!(st.entry, Some((_, w)) if w <= when) {
        return false;
    }
    st.orphan_entry();
    st.entry = Some((q.clone(), when));
    heap.push(
        when,
        HeapItem {
            timer: t.clone(),
            seq: st.seq,
        },
    );
    drop(st);
    q.publish(&heap);
    true
}

impl TimerQueue {
    /// Runs every timer due at `now`, appending what must happen once the
    /// locks are released (wakes, callbacks). Any thread may call it: the
    /// owner, or a thief for an idle or stuck P. Returns how many fired.
    pub(crate) fn run(&self, now: u64, out: &mut Vec<Fired>) -> usize {
        if self.next_when() > now {
            return 0;
        }
        let mut heap = self.heap();
        let mut fired = 0;
        while heap.peek_when().is_some_and(|w| w <= now) {
            let e = heap.pop().expect("peeked");
            let t = e.item.timer;
            let mut st = t.lock();
            if !st.is_live(self, e.item.seq, e.when) {
                self.zombies.fetch_sub(1, Ordering::Relaxed);
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
            if st.period > 0 {
                // A ticker: the next tick one period after the missed ones.
                let behind = now - st.when;
                st.when += st.period * (1 + behind / st.period);
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
                st.when = 0;
                st.entry = None;
            }
            match &mut st.action {
                Action::Wake(w) => {
                    if let Some(w) = w.take() {
                        out.push(Fired::Wake(w));
                    }
                }
                // Under the timer lock, as stop/reset drain under it.
                Action::Send(tx, _) => {
                    let _ = tx.try_send(Instant::now());
                }
                Action::Func { f, spawn } => out.push(Fired::Func(f.clone(), *spawn)),
            }
        }
        // Sweep when zombies pass a quarter of the heap.
        let z = self.zombies.load(Ordering::Relaxed);
        if z > 0 && z * 4 > heap.len() {
            let mut removed = 0;
            heap.retain(|e| {
                let keep = e.item.timer.lock().is_live(self, e.item.seq, e.when);
                removed += usize::from(!keep);
                keep
            });
            self.zombies.fetch_sub(
                removed.min(self.zombies.load(Ordering::Relaxed)),
                Ordering::Relaxed,
            );
        }
        self.publish(&heap);
        fired
    }

    /// Removes every entry (shutdown); the timers are dropped by the caller
    /// outside the lock.
    pub(crate) fn drain(&self) -> Vec<Arc<TimerInner>> {
        let mut heap = self.heap();
        let out: Vec<_> = heap.drain().map(|e| e.item.timer).collect();
        self.zombies.store(0, Ordering::Relaxed);
        self.publish(&heap);
        out
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    //! loom models of the timer state machine across two Ps' heaps.
    //! `RUSTFLAGS="--cfg loom" cargo test -p goro --lib --release loom_timer`
    use super::*;
    use crate::loom::thread;
    use std::sync::atomic::AtomicUsize as StdCount;

    fn counting_timer() -> (Arc<TimerInner>, Arc<StdCount>) {
        let n = Arc::new(StdCount::new(0));
        let c = n.clone();
        let f: Arc<dyn Fn() + Send + Sync> = Arc::new(move || {
            c.fetch_add(1, Ordering::SeqCst);
        });
        (TimerInner::new(Action::Func { f, spawn: false }), n)
    }

    fn fire(q: &TimerQueue, now: u64) {
        let mut out = Vec::new();
        q.run(now, &mut out);
        for f in out {
            if let Fired::Func(f, _) = f {
                f();
            }
        }
    }

    fn assert_clean(q: &TimerQueue) {
        assert_eq!(q.len(), 0, "heap empty after everything fired");
        assert_eq!(q.zombies.load(Ordering::SeqCst), 0, "zombie count balanced");
    }

    /// stop racing the owner's fire: the callback runs iff stop says it
    /// did not prevent it, and exactly once.
    #[test]
    fn loom_timer_stop_races_fire() {
        loom::model(|| {
            let q0 = TimerQueue::new();
            let (t, fired) = counting_timer();
            arm(&q0, &t, 10, 0);
            let (q, tt) = (q0.clone(), t.clone());
            let owner = thread::spawn(move || fire(&q, 100));
            let stopped = t.stop();
            owner.join().unwrap();
            fire(&q0, 1000);
            assert_eq!(fired.load(Ordering::SeqCst) + usize::from(stopped), 1);
            assert_clean(&q0);
            drop(tt);
        });
    }

    /// A reset to an earlier time from another P races the owner's fire:
    /// after the reset, exactly one more fire happens, never two.
    #[test]
    fn loom_timer_reset_on_another_p_races_fire() {
        loom::model(|| {
            let (q0, q1) = (TimerQueue::new(), TimerQueue::new());
            let (t, fired) = counting_timer();
            arm(&q0, &t, 10, 0);
            let (q, tt) = (q0.clone(), t.clone());
            let owner = thread::spawn(move || fire(&q, 100));
            arm(&q1, &t, 5, 0);
            owner.join().unwrap();
            let before = fired.load(Ordering::SeqCst);
            fire(&q0, 1000);
            fire(&q1, 1000);
            let after = fired.load(Ordering::SeqCst) - before;
            assert!(before <= 1, "fired {before} times before the final runs");
            // Whatever the owner did, the re-armed timer fires exactly once more
            // unless the owner's fire already consumed this arming.
            assert!(
                after <= 1 && before + after >= 1,
                "before={before} after={after}"
            );
            assert_clean(&q0);
            assert_clean(&q1);
            drop(tt);
        });
    }

    /// A reset to a later time (the lazy path) racing the fire of the old
    /// entry: at most one fire before the new deadline, exactly one in all.
    #[test]
    fn loom_timer_lazy_reset_races_fire() {
        loom::model(|| {
            let q0 = TimerQueue::new();
            let (t, fired) = counting_timer();
            arm(&q0, &t, 10, 0);
            let (q, tt) = (q0.clone(), t.clone());
            let owner = thread::spawn(move || fire(&q, 100));
            arm(&q0, &t, 500, 0);
            owner.join().unwrap();
            fire(&q0, 1000);
            let n = fired.load(Ordering::SeqCst);
            assert!(n == 1 || n == 2, "fired {n} times");
            assert_clean(&q0);
            drop(tt);
        });
    }
}

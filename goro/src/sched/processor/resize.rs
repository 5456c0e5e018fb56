//! Changing the number of Ps while tasks run (Go's `procresize`).
//!
//! [`crate::Runtime::set_procs`] and the monitor (following a container's
//! CPU limit, `sysmon.rs`) call [`Sched::resize_to`]. Go resizes with the
//! world stopped: every M is at a safe point, `allp` is reallocated, the
//! removed Ps' work is moved, and the world restarts. goro cannot stop the
//! world: a future runs until its `poll` returns, and a resize may even be
//! asked for by a task running on a P that it removes. So a resize never
//! waits for another thread; it changes what the Ps *mean* and lets each
//! holder find out at its next schedule point.
//!
//! # The shape
//!
//! * Ps live in a table that only grows (`allp.rs`): ids `0..procs` are
//!   *active*; ids from `procs` up are *removed*. A removed P is either
//!   *free* (nobody holds it; listed in [`Resize`]'s free list) or *held*
//!   (an M still holds it and has not yet noticed; counted in `held`).
//! * `procs` changes only under the idle lock, together with the idle list.
//!   So under that lock the idle list holds only active Ps, and every P a
//!   thread gives back through [`Sched::pidleput`] is checked against a
//!   count that cannot change meanwhile.
//! * **Shrink** (under the idle lock): lower `procs`; take the removed Ps
//!   that were idle off the idle list and retire them now; count the others
//!   as held. An M holding a removed P retires it itself: at the start of
//!   find-runnable (one load per task, `find.rs`), or when it gives the P back
//!   (`pidleput` sees the id out of range and retires instead of idling).
//! * **Retiring** a P ([`Sched::retire_locked`], under the idle lock): its
//!   `runnext` and ring go to the global queue, its live timers to the
//!   active Ps' heaps (spread round-robin, each target's timer bit set
//!   after the push, as `push_on` does), and the P joins the free list.
//!   After the lock, [`Sched::after_retire`] wakes a thread for the moved
//!   tasks and tells the timer sleeper about the moved deadlines.
//! * **Grow** (under the idle lock, after allocating any new Ps): raise
//!   `procs`; a free P in the new range goes onto the idle list, a held one
//!   simply stays with its M (which now finds it in range and keeps it),
//!   a new one goes onto the idle list.
//! * A removed P's pool slot stays with it (the P is never freed): its
//!   values stay reachable by the other Ps' steals (`Pool::get` scans every
//!   slot that has held values) and are dropped by the monitor's cycles
//!   like any other; a grow that brings the P back brings the slot back.
//!
//! # The races, and why nothing is lost or run twice
//!
//! * **Run queue.** Only a P's holder puts into its queue; anyone may take
//!   from it (the head moves by CAS, `runq.rs`). A retire happens when
//!   nobody holds the P (it was idle, or its holder is the one retiring it
//!   and has stopped running tasks), so after the drain nothing is put
//!   there again until a grow hands the P out anew. A thief that read the
//!   old `procs` and steals from a removed P meanwhile takes tasks by the
//!   same CAS as the drain: each task goes to exactly one of them.
//! * **Timers armed from outside.** A thread without a P arms on a P picked
//!   round-robin below `procs` (`arm_queue`). If it read `procs` before a
//!   shrink, it may push onto a P that the shrink has just retired, after
//!   the retire moved the heap: that timer would be forgotten. So the
//!   armer, after its push, re-reads `procs` and, if its P is now out of
//!   range, moves that P's timers itself ([`Sched::rehome_timers`]). The
//!   two sides are ordered by the heap lock: if the armer's push comes
//!   after the retire's take, its lock acquisition follows the shrink's
//!   store of `procs`, so its re-read sees the smaller count. The loom model
//!   `loom_resize_shrink_keeps_a_timer_armed_meanwhile` checks this with
//!   a thief stealing from the removed P at the same time.
//! * **Timers of a held removed P.** Its holder arms on it and runs it as
//!   usual until it notices; thieves and the timer sleeper look only at
//!   active Ps, so they do not spin on a heap nobody may run. The monitor
//!   also sweeps removed Ps (`sweep_retired`): a holder stuck in a long
//!   poll does not keep their queued tasks and timers from the active Ps
//!   for more than a monitor round, and the monitor stays awake while any
//!   removed P is held.
//! * **Spinning.** An M that retires its P while counted as spinning keeps
//!   the count if it finds an idle P to go on with, and otherwise stops
//!   spinning and re-checks the global queue after the decrement (the idle
//!   side of publish-fence-check, `idle.rs`).
//!
//! # Rejected
//!
//! * Go's stop-the-world: a task that calls `set_procs` from a P it
//!   removes, or a poll that never returns, would block the resize forever.
//! * A resize that waits until every removed P is handed back: the same
//!   problem for a caller on a removed P; and the caller gains nothing, since
//!   a held removed P is as harmless as a busy one.
//! * Capacity fixed at start-up with an "active" count (`allp.rs` says why
//!   the table grows instead).

use crate::sched::machine::Machine;
use crate::sched::processor::idle::HeldP;
use crate::sched::processor::Processor;
use crate::sched::timer::queue::push;
use crate::sched::timer::NEVER;
use crate::sched::Sched;
use crate::stats::bump_shared;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

/// Resize state beside `Sched::procs`.
pub(crate) struct Resize {
    /// One resize at a time.
    lock: Mutex<()>,
    /// Removed Ps that nobody holds. Touched only under the idle lock.
    free: Mutex<Vec<usize>>,
    /// Removed Ps still held by an M. Changed only under the idle lock.
    held: AtomicUsize,
    /// Whether the monitor follows the machine's CPU limit (cleared by a
    /// user's `set_procs`, as Go's `GOMAXPROCS(n)` stops updates).
    pub(crate) follow: AtomicBool,
}

impl Resize {
    pub(crate) fn new() -> Resize {
        Resize {
            lock: Mutex::new(()),
            free: Mutex::new(Vec::new()),
            held: AtomicUsize::new(0),
            follow: AtomicBool::new(false),
        }
    }

    /// Removed Ps still held by an M (the monitor stays awake for them).
    pub(crate) fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }
}

/// A stride coprime with `n` for a random visiting order (Go's
/// `randomOrder`), from the random `r`. `n` changes with resizes, so the
/// stride is found here rather than in a table made at start-up.
#[inline]
pub(crate) fn stride(r: usize, n: usize) -> usize {
    let mut s = r % n + 1;
    while crate::sched::gcd(s, n) != 1 {
        s = s % n + 1;
    }
    s
}

impl Sched {
    /// Sets the number of active Ps to `new` (`1..=MAX_PROCS`, checked by
    /// the caller); returns the previous number. Never waits for another
    /// thread (module docs). `by_user`: a `set_procs`, which stops the
    /// monitor's following; else the monitor's own resize, done only if
    /// following is still on (checked under the resize lock, so a
    /// `set_procs` is never undone by a monitor round that began before it).
    pub(crate) fn resize_to(&self, new: usize, by_user: bool) -> usize {
        let _one = self.resize.lock.lock().unwrap_or_else(|e| e.into_inner());
        if by_user {
            self.resize.follow.store(false, Ordering::Relaxed);
        } else if !self.resize.follow.load(Ordering::Relaxed) {
            return self.procs();
        }
        let old = self.procs();
        if new == old {
            return old;
        }
        let allocated = self.ps.allocated();
        if new > allocated {
            self.ps.grow_to(new, |i| Processor::new(i, self.me.clone()));
        }
        {
            let mut lists = self.idle.lock();
            // SeqCst: an armer that pushed onto a P after this store re-reads
            // it (module docs, "Timers armed from outside").
            self.procs.store(new, Ordering::SeqCst);
            if new < old {
                let idle = self.idle.pidle_remove_from(&mut lists, new);
                let held = (old - new) - idle.len();
                self.resize.held.fetch_add(held, Ordering::Relaxed);
                for p in idle {
                    self.retire_p(p);
                }
            } else {
                let mut free = self.resize.free.lock().unwrap_or_else(|e| e.into_inner());
                for p in old..new {
                    if let Some(i) = free.iter().position(|&q| q == p) {
                        free.swap_remove(i);
                    } else if p < allocated {
                        // Still held: its M keeps it, now in range again.
                        self.resize.held.fetch_sub(1, Ordering::Relaxed);
                        continue;
                    }
                    // SAFETY: `p` was on the free list (its last `HeldP` was
                    // consumed by its retire) or is new (never handed out);
                    // either way nobody holds it, and it leaves the free
                    // list here.
                    unsafe {
                        self.idle
                            .pidleput_free(&mut lists, p, || self.ps[p].timers.len() > 0)
                    };
                }
            }
        }
        bump_shared(&self.counters.procs_changes, 1);
        self.monitor.kick();
        self.after_retire();
        old
    }

    /// Retires P `p`, removed by a resize and given back by its holder
    /// (from [`Sched::pidleput`]). Caller holds the idle lock.
    pub(crate) fn retire_locked(&self, p: HeldP) {
        self.resize.held.fetch_sub(1, Ordering::Relaxed);
        self.retire_p(p);
    }

    /// Moves P `p`'s tasks and timers to the active Ps and frees it: the
    /// held P ends here, its id goes to the free list. Caller holds the
    /// idle lock.
    fn retire_p(&self, mut p: HeldP) {
        let tasks = p.local(self).drain();
        let p = p.id();
        let pp = &self.ps[p];
        if !tasks.is_empty() {
            bump_shared(&self.counters.procs_tasks_moved, tasks.len() as u64);
            self.global.push_batch(tasks);
        }
        self.move_timers(p);
        pp.stuck.store(false, Ordering::Relaxed);
        self.resize
            .free
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(p);
    }

    /// Moves the live timers of P `p` onto the active Ps' heaps. Caller
    /// holds the idle lock (so `procs` is stable and the targets active).
    fn move_timers(&self, p: usize) {
        let timers = self.ps[p].timers.take_live();
        if timers.is_empty() {
            return;
        }
        bump_shared(&self.counters.procs_timers_moved, timers.len() as u64);
        // Relaxed: under the idle lock, where `procs` changes.
        let procs = self.procs.load(Ordering::Relaxed);
        for (i, t) in timers.iter().enumerate() {
            let to = (p + i) % procs;
            push(&self.ps[to].timers, t);
            // After the push (see `Idle::pidleput`).
            self.idle.set_timer_bit(to);
        }
    }

    /// After work moved off removed Ps: a thread for the moved tasks, and
    /// the timer sleeper told about the moved deadlines.
    pub(crate) fn after_retire(&self) {
        self.wakep();
        let when = self.earliest_timer();
        if when != NEVER {
            self.timer_added(when);
        }
    }

    /// An armer pushed a timer onto P `p` from outside and then found `p`
    /// removed: move that P's timers (module docs).
    #[cold]
    pub(crate) fn rehome_timers(&self, p: usize) {
        {
            let _lists = self.idle.lock();
            // Relaxed: under the idle lock, where `procs` changes.
            if p < self.procs.load(Ordering::Relaxed) {
                return; // grown back meanwhile: the P's own heap is fine
            }
            self.move_timers(p);
        }
        self.after_retire();
    }

    /// The monitor's round over removed Ps that are still held: their
    /// queued tasks and timers go to the active Ps, so that a holder stuck
    /// in a long poll does not hold them back (consumers may take from any
    /// queue; only the holder puts).
    pub(crate) fn sweep_retired(&self) {
        if self.resize.held() == 0 {
            return;
        }
        let procs = self.procs();
        let mut moved = false;
        for p in procs..self.ps.allocated() {
            let pp = &self.ps[p];
            if !pp.runq.is_empty() {
                // Its holder may push meanwhile: a consumer's take.
                let tasks = pp.runq.steal_all();
                if !tasks.is_empty() {
                    bump_shared(&self.counters.procs_tasks_moved, tasks.len() as u64);
                    self.global.push_batch(tasks);
                    moved = true;
                }
            }
            if pp.timers.len() > 0 {
                let _lists = self.idle.lock();
                if p >= self.procs.load(Ordering::Relaxed) {
                    self.move_timers(p);
                    moved = true;
                }
            }
        }
        if moved {
            self.after_retire();
        }
    }
}

impl Machine {
    /// Find-runnable found this M's P removed by a resize:
    /// give it back (retiring it) and go on with an idle P if there is one.
    /// Returns whether the M holds a P again.
    #[cold]
    pub(crate) fn retire_own_p(&mut self) -> bool {
        let p = self.dropp();
        let retired = {
            let mut lists = self.sched.idle.lock();
            self.sched.pidleput(&mut lists, p)
        };
        if retired {
            self.sched.after_retire();
        }
        if let Some(q) = self.sched.acquire_idle_p() {
            self.acquirep(q);
            return true;
        }
        if self.spinning {
            // Idle side of publish-fence-check (`idle.rs`): a task published
            // while we still counted as spinning is seen here.
            self.spinning = false;
            self.sched.idle.dec_spinning();
            crate::loom::fence(crate::loom::Ordering::SeqCst);
            if !self.sched.global.is_empty() {
                self.sched.wakep();
            }
        }
        false
    }
}

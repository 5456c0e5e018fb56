//! How the scheduler runs timers (Go's `checkTimers`, `timerpMask`,
//! `wakeNetPoller`), seed 001.
//!
//! * A P runs its own due timers at the top of find-runnable. The check is
//!   one atomic load of the heap's earliest deadline, plus a clock read only
//!   when the P has timers at all.
//! * A thief on its last steal pass runs the due timers of idle Ps that
//!   have any (the timer mask) and of Ps the monitor marked stuck.
//! * When threads park, one of them becomes the *timer sleeper*: it parks
//!   with a timeout equal to the earliest deadline of all heaps, then takes an
//!   idle P and runs what is due. Arming a timer earlier than the sleeper's
//!   deadline wakes it (`Handoff::Recheck`); arming one when nobody sleeps on
//!   timers starts a thread (`wakep`), which parks as the sleeper. So a timer
//!   fires on time even when every P is idle, and an idle runtime with no
//!   timers makes no wakeups at all. While sockets are registered the
//!   sleeper sleeps in the poller's epoll with the same timeout, so it
//!   also wakes for readiness (net/poller.rs).
//! * While every P is busy, arming wakes nobody: the busy Ps check their
//!   own heaps every few slices and, when they run dry, each other's. A P
//!   that goes idle re-reads every heap as its thread parks, and a P handed
//!   off (`block_in_place`) passes its earliest deadline to the sleeper, as
//!   Go's `handoffp` does. Waking the sleeper on every arm cost a futex
//!   call per timer when timers are armed back to back on busy Ps.
//!
//! The protocol between an arming thread and the sleeper is the same
//! publish-fence-check pairing as worker wakeups: the armer publishes the
//! heap's new earliest deadline, fences, then reads `sleep_until`; the
//! sleeper stores `sleep_until`, fences, then re-reads every heap's
//! earliest deadline. The loom models `loom_timer_sleeper_*`
//! (`sched/loom/tests.rs`) check it, with the fallbacks around it.

use crate::loom::Unpoison;
use crate::loom::{fence, Ordering};
use crate::sched::context::{current_p, wake_quietly, with_current_sched};
use crate::sched::machine::park::{Handoff, Parker};
use crate::sched::machine::Machine;
use crate::sched::policy::TimerPlacement;
use crate::sched::timer::clock;
use crate::sched::timer::queue::{push, TimerQueue};
use crate::sched::timer::{Action, Callback, Fired, SetOutcome, TimerInner, NEVER};
use crate::sched::Sched;
use crate::stats::{bump, bump_shared};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::task::Waker;
use std::time::Duration;

/// Arms `t` for `when` (`0`: stops it) with `period` on the runtime of the
/// calling thread, or on the timer's own runtime from a thread of none.
/// Returns whether it was pending before (Go's `Stop`/`Reset` result).
pub(crate) fn arm_timer(t: &Arc<TimerInner>, when: u64, period: u64) -> bool {
    with_current_sched(|s| s.arm_timer(t, when, period)).unwrap_or_else(|| {
        match t.home.sched.upgrade() {
            Some(s) => s.arm_timer(t, when, period),
            // The runtime is gone: nothing will ever run a heap again.
            None => t.set(when, period).was_pending,
        }
    })
}

/// A sleep (or timeout) is dropped with its timer: kept as the spare of the
/// calling thread's P's queue when the timer is that runtime's, stopped
/// otherwise.
pub(crate) fn release_sleep_timer(t: Arc<TimerInner>) {
    let mut t = Some(t);
    with_current_sched(|s| s.release_sleep(&mut t));
    if let Some(t) = t {
        arm_timer(&t, 0, 0);
    }
}

/// Gives `t` the heap entry it needs (a receiver parked on its channel):
/// on the calling thread's runtime, or on the timer's own.
pub(crate) fn push_timer(t: &Arc<TimerInner>) {
    if with_current_sched(|s| s.push_timer(t)).is_none() {
        if let Some(s) = t.home.sched.upgrade() {
            s.push_timer(t);
        }
    }
}

impl Sched {
    /// Runtime clock now (see `sched/timer/clock.rs`).
    #[inline]
    pub(crate) fn now(&self) -> u64 {
        clock::now()
    }

    /// The queue a timer armed by this thread goes to: the global one, the
    /// current P's, or (from a thread without a P) any P's, round-robin;
    /// in the last case with that P, which may be idle or going idle: the
    /// caller sets its timer-mask bit after the push (`push_on`).
    pub(crate) fn arm_queue(&self) -> (&Arc<TimerQueue>, Option<usize>) {
        match self.policy.timers {
            TimerPlacement::Global => (&self.global_timers, None),
            TimerPlacement::PerP => match current_p(self) {
                // Our own P: its bit stays set while we hold it (`pidleget`
                // sets it, only our own `pidleput` clears it).
                Some(p) => (&self.ps[p].timers, None),
                None => {
                    let p = self.timer_rr.fetch_add(1, Ordering::Relaxed) % self.procs();
                    (&self.ps[p].timers, Some(p))
                }
            },
        }
    }

    /// Counts a timer event on the current P, or in the shared block.
    fn count_timer(&self, pick: impl Fn(&crate::stats::Counters) -> &AtomicU64) {
        match current_p(self) {
            Some(p) => bump(pick(&self.ps[p].counters), 1),
            None => bump_shared(pick(&self.counters), 1),
        }
    }

    /// Arms (or stops, `when == 0`) `t`; returns whether it was pending.
    pub(crate) fn arm_timer(&self, t: &Arc<TimerInner>, when: u64, period: u64) -> bool {
        let SetOutcome {
            was_pending: pending,
            needs_push,
        } = t.set(when, period);
        if when == 0 {
            if pending {
                self.count_timer(|c| &c.timers_stopped);
            }
        } else {
            self.count_timer(|c| &c.timers_armed);
        }
        if needs_push {
            self.push_timer(t);
        }
        pending
    }

    /// Puts `t` on this thread's heap if it needs an entry, and makes sure
    /// some thread wakes for it if it became that heap's earliest.
    /// Makes a one-shot timer armed for `when` on the current P's queue
    /// (`sleep`, context deadlines): `new` + `arm_timer` without the
    /// `set` round trip, since a fresh timer has no state to drain.
    pub(crate) fn start_timer(&self, action: Action, func: Callback, when: u64) -> Arc<TimerInner> {
        let (q, p) = self.arm_queue();
        let t = TimerInner::new_at(action, func, q.clone(), when);
        self.count_timer(|c| &c.timers_armed);
        self.push_on(q, p, &t);
        t
    }

    /// Arms a sleep's timer: the queue's spare if it has one, else a new
    /// one.
    ///
    /// Why a spare: a timeout per operation (hyper's read-header timeout,
    /// `timeout(d, read)` in a loop) makes a timer, arms it far out and
    /// drops it soon after, every time: an allocation, a heap push and a
    /// zombie each. Go keeps one timer per goroutine for `time.Sleep` for
    /// the same reason. The spare is the timer of the last sleep dropped on
    /// this P before it fired, still armed (its waker forgotten). The next
    /// sleep on this P takes it, and since its deadline is usually later
    /// than the old entry's, the entry stays where it is and moves when it
    /// surfaces: no allocation and no push.
    pub(crate) fn start_sleep(&self, waker: Waker, when: u64) -> Arc<TimerInner> {
        let (q, p) = self.arm_queue();
        self.count_timer(|c| &c.timers_armed);
        match q.take_spare() {
            Some(t) => {
                if t.rearm_sleep(waker, when) {
                    self.push_on(q, p, &t);
                }
                t
            }
            None => {
                let t =
                    TimerInner::new_at(Action::Wake(Some(waker)), Callback::None, q.clone(), when);
                self.push_on(q, p, &t);
                t
            }
        }
    }

    /// Keeps a finished sleep's timer (taken out of `t`) as the spare of the
    /// current P's queue, if it is this runtime's and the thread holds a P;
    /// leaves `t` alone otherwise. The spare it displaces is stopped.
    fn release_sleep(&self, t: &mut Option<Arc<TimerInner>>) {
        let mine = t
            .as_ref()
            .is_some_and(|t| std::ptr::eq(t.home.sched.as_ptr(), self));
        // Not after shutdown has drained the queues: a spare holds its
        // home queue, and nothing would drain it again.
        if !mine || current_p(self).is_none() || self.is_shutdown() {
            return;
        }
        let (q, _) = self.arm_queue();
        let t = t.take().expect("checked");
        if t.forget_waker() {
            self.count_timer(|c| &c.timers_stopped);
        }
        if let Some(old) = q.put_spare(t) {
            let _ = old.set(0, 0);
        }
    }

    pub(crate) fn push_timer(&self, t: &Arc<TimerInner>) {
        let (q, p) = self.arm_queue();
        self.push_on(q, p, t);
    }

    /// Pushes `t` on `q`; `foreign` is the P owning `q` if the caller does
    /// not hold it.
    fn push_on(&self, q: &Arc<TimerQueue>, foreign: Option<usize>, t: &Arc<TimerInner>) {
        let new_head = push(q, t);
        if let Some(p) = foreign {
            // After the push, whatever it did, and without first looking
            // at the idle bit: the P's M may be reading the heap as empty
            // on its way to the idle list right now, and only a set that
            // follows the push pairs with its clear-then-read (see
            // `Idle::pidleput`). Setting it only when the P looked idle
            // (as first written) lost the bit in that race.
            self.idle.set_timer_bit(p);
            // A shrink may have removed the P since we picked it, and
            // moved its heap before our push: move it again (resize.rs).
            // SeqCst: pairs with the shrink's store (the heap lock orders
            // the two; SeqCst keeps the reasoning local).
            if p >= self.procs.load(Ordering::SeqCst) {
                self.rehome_timers(p);
            }
        }
        if let Some(when) = new_head {
            self.timer_added(when);
        }
    }

    /// Go's `wakeNetPoller`: make sure some thread will wake for `when`, the
    /// new earliest deadline of one heap.
    pub(crate) fn timer_added(&self, when: u64) {
        // SeqCst fence: the armer's side of publish-fence-check (module docs).
        fence(Ordering::SeqCst);
        let until = self.sleep_until.load(Ordering::SeqCst);
        if when >= until {
            return; // the sleeper wakes earlier anyway
        }
        if self.idle.npidle() == 0 {
            // Every P is busy: their loops run their own timers and, on a
            // thief's last pass, each other's. A P that goes idle later
            // re-reads every heap before it parks (`park_as_timer_sleeper`),
            // so waking a thread here would only be a futex call per timer
            // (SeqCst: the npidle read pairs with that P's increment).
            return;
        }
        if until != NEVER {
            // A sleeper (maybe with no deadline at all, `NEVER - 1`).
            let sleeper = self.timer_sleeper.lock().unpoison().clone();
            if let Some(parker) = sleeper {
                parker.unpark(Handoff::Recheck);
                return;
            }
        }
        // Nobody sleeps on a deadline: if a P is idle, start a thread that
        // will (all-busy Ps run their own timers, and each other's).
        self.wakep();
    }

    /// The sleeper's half of the hand-off with [`Sched::timer_added`]
    /// (module docs), the part of `Machine::park_as_timer_sleeper` before
    /// the sleep, apart so that the loom models run it as it is: makes
    /// `parker` the timer sleeper, publishes its deadline, re-reads every
    /// heap, and returns the deadline to sleep until (`NEVER`: no timers).
    /// `None` if another M already sleeps on timers; then it makes sure that
    /// one's deadline covers the earliest timer.
    pub(crate) fn become_timer_sleeper(&self, parker: &Arc<Parker>) -> Option<u64> {
        {
            let mut slot = self.timer_sleeper.lock().unpoison();
            if let Some(other) = slot.as_ref() {
                // Someone else sleeps on timers. A timer armed while every
                // P was busy did not wake it (`timer_added`); now that a P
                // is idle, make sure its deadline covers the earliest timer.
                // SeqCst: this read follows our P's SeqCst idle transition,
                // the other half of that pairing.
                if self.earliest_timer() < self.sleep_until.load(Ordering::SeqCst) {
                    other.unpark(Handoff::Recheck);
                }
                return None;
            }
            *slot = Some(parker.clone());
        }
        // Publish our deadline, then re-read the heaps (module docs).
        let mut until = self.earliest_timer();
        loop {
            // `NEVER` would say "nobody sleeps"; one less is as far off.
            self.sleep_until
                .store(until.min(NEVER - 1), Ordering::SeqCst);
            fence(Ordering::SeqCst);
            let again = self.earliest_timer();
            if again == until {
                return Some(until);
            }
            until = again;
        }
    }

    /// The timer sleeper woke: nobody sleeps on timers until the next
    /// [`Sched::become_timer_sleeper`].
    pub(crate) fn end_timer_sleep(&self) {
        self.sleep_until.store(NEVER, Ordering::SeqCst);
        *self.timer_sleeper.lock().unpoison() = None;
    }

    /// The earliest deadline over every heap.
    pub(crate) fn earliest_timer(&self) -> u64 {
        // Active Ps: a removed one's timers are moved (resize.rs).
        let per_p = self
            .ps
            .iter()
            .take(self.procs())
            .map(|p| p.timers.next_when())
            .min()
            .unwrap_or(NEVER);
        per_p.min(self.global_timers.next_when())
    }

    /// The queue the P `p` checks in find-runnable.
    pub(crate) fn own_timers(&self, p: usize) -> &Arc<TimerQueue> {
        match self.policy.timers {
            TimerPlacement::Global => &self.global_timers,
            TimerPlacement::PerP => &self.ps[p].timers,
        }
    }

    /// Runs what firing produced: wakes (into the current P's queue) and
    /// `after_func` callbacks (as tasks, or inline for internal ones).
    #[inline(always)]
    pub(crate) fn run_fired(self: &Arc<Self>, fired: &mut Vec<Fired>) {
        for f in fired.drain(..) {
            match f {
                Fired::Wake(w) => w.wake(),
                Fired::Func(t, true) => {
                    crate::sched::task::spawn::spawn_on(self, async move { t.call() }, None)
                        .detach();
                }
                Fired::Func(t, false) => t.call(),
            }
        }
    }

    /// [`Sched::run_fired`] for the sim driver (`sim/run.rs`). A copy of
    /// its own, with its own callback spawn: while the machine's
    /// `run_timers` is the only caller of `run_fired`, the generic spawn
    /// of an `after_func` callback there has one call site and LLVM
    /// inlines it; a second caller cost that inlining and 1.3% more
    /// instructions in `after_func_1000`.
    #[cold]
    #[inline(never)]
    pub(crate) fn run_fired_sim(self: &Arc<Self>, fired: &mut Vec<Fired>) {
        for f in fired.drain(..) {
            match f {
                Fired::Wake(w) => w.wake(),
                Fired::Func(t, true) => {
                    crate::sched::task::spawn::spawn_on(self, async move { t.call() }, None);
                }
                Fired::Func(t, false) => t.call(),
            }
        }
    }

    /// Drops every timer (shutdown), breaking the heap ↔ timer cycles.
    pub(crate) fn drain_timers(&self) {
        let mut all = self.global_timers.drain();
        for p in self.ps.iter() {
            all.extend(p.timers.drain());
        }
        drop(all);
    }
}

/// How an M's turn at [`Machine::park_as_timer_sleeper`] ended.
pub(crate) enum TimerSleep {
    /// Another M is the timer sleeper: this one parks plainly.
    NotSleeper,
    /// It slept on the timers and woke: to a hand-off, or (`None`) because
    /// the deadline passed or an earlier timer needs a re-check.
    Woke(Option<Handoff>),
}

impl Machine {
    /// Runs the due timers of `q` on the current P; returns how many fired.
    pub(crate) fn run_timers(&mut self, q: &TimerQueue, now: u64) -> usize {
        let mut fired = std::mem::take(&mut self.fired);
        let n = q.run(now, &mut fired);
        if n > 0 {
            bump(&self.sched.ps[self.p()].counters.timers_fired, n as u64);
            crate::sched::trace::timers_fired(&self.sched, n);
            wake_quietly(|| self.sched.run_fired(&mut fired));
            self.sched.wakep();
        }
        self.fired = fired;
        n
    }

    /// Step 1 of find-runnable: this P's due timers. One atomic load when
    /// the P has no timers; a clock read otherwise. Returns whether timers
    /// ran (their wakers may have given the P away: the caller reads it
    /// again, context.rs's "Holding a P").
    pub(crate) fn check_own_timers(&mut self) -> bool {
        let next = self.sched.own_timers(self.p()).next_when();
        if next == NEVER {
            return false; // the common case: one atomic load, no clock read
        }
        let now = self.sched.now();
        if next <= now {
            let q = self.sched.own_timers(self.p()).clone();
            self.run_timers(&q, now);
            return true;
        }
        false
    }

    /// Parks as the timer sleeper if nobody else is.
    pub(crate) fn park_as_timer_sleeper(&mut self, parker: &Arc<Parker>) -> TimerSleep {
        let sched = self.sched.clone();
        let Some(until) = sched.become_timer_sleeper(parker) else {
            return TimerSleep::NotSleeper;
        };
        // `sleeper_park` sleeps in the poller instead of the futex while
        // sockets are registered (net/poller.rs), with the same timeout.
        let h = if until == NEVER {
            self.sleeper_park(None)
        } else {
            let now = sched.now();
            if until <= now {
                None
            } else {
                self.sleeper_park(Some(Duration::from_nanos(until - now)))
            }
        };
        sched.end_timer_sleep();
        bump_shared(&sched.counters.timer_sleeper_wakes, 1);
        TimerSleep::Woke(match h {
            Some(Handoff::Recheck) => None,
            other => other,
        })
    }
}

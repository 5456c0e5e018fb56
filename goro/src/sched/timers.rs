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
//!   timers makes no wakeups at all. (The netpoller will take the sleeper's
//!   place: it blocks in epoll with the same timeout.)
//!
//! The protocol between an arming thread and the sleeper is the same
//! publish-fence-check pairing as worker wakeups: the armer publishes the
//! heap's new earliest deadline, fences, then reads `sleep_until`; the
//! sleeper stores `sleep_until`, fences, then re-reads every heap's
//! earliest deadline.

use crate::loom::{fence, Ordering};
use crate::runtime::policy::TimerPlacement;
use crate::sched::machine::{current_p, Machine};
use crate::sched::park::{Handoff, Parker};
use crate::sched::Sched;
use crate::stats::{bump, bump_shared};
use crate::time::timer::{arm, Fired, TimerInner, TimerQueue, NEVER};
use std::sync::Arc;
use std::time::{Duration, Instant};

impl Sched {
    /// Runtime nanoseconds now (never 0, which means "not armed").
    pub(crate) fn now(&self) -> u64 {
        (self.start.elapsed().as_nanos() as u64).max(1)
    }

    /// Runtime nanoseconds at `t`: 1 for the past, `NEVER` beyond `u64`.
    pub(crate) fn when_of(&self, t: Instant) -> u64 {
        match t.checked_duration_since(self.start) {
            None => 1,
            Some(d) => u64::try_from(d.as_nanos()).map_or(NEVER, |n| n.clamp(1, NEVER - 1)),
        }
    }

    /// Runtime nanoseconds `d` from now, saturating to `NEVER`.
    pub(crate) fn when_after(&self, d: Duration) -> u64 {
        match u64::try_from(d.as_nanos()) {
            Ok(n) => self
                .now()
                .checked_add(n)
                .map_or(NEVER, |w| w.min(NEVER - 1)),
            Err(_) => NEVER,
        }
    }

    /// The instant of runtime time `when`.
    pub(crate) fn instant_of(&self, when: u64) -> Instant {
        self.start + Duration::from_nanos(when)
    }

    /// Arms `t` for `when` on the right heap: the global one, the current
    /// P's, or (from a thread without a P) any P's, round-robin.
    pub(crate) fn arm_timer(&self, t: &Arc<TimerInner>, when: u64, period: u64) {
        let (q, p) = match self.policy.timers {
            TimerPlacement::Global => (&self.global_timers, None),
            TimerPlacement::PerP => {
                let p = current_p(self)
                    .unwrap_or_else(|| self.timer_rr.fetch_add(1, Ordering::Relaxed) % self.procs);
                (&self.ps[p].timers, Some(p))
            }
        };
        if arm(q, t, when, period) {
            bump_shared(&self.counters.timers_armed, 1);
            if let Some(p) = p {
                if self.idle.is_idle(p) {
                    self.idle.set_timer_bit(p);
                }
            }
            self.timer_added(when);
        }
    }

    /// Stops `t`; returns whether it was armed.
    pub(crate) fn stop_timer(&self, t: &TimerInner) -> bool {
        let was = t.stop();
        if was {
            bump_shared(&self.counters.timers_stopped, 1);
        }
        was
    }

    /// Go's `wakeNetPoller`: make sure some thread will wake for `when`.
    fn timer_added(&self, when: u64) {
        // SeqCst fence: the armer's side of publish-fence-check (module docs).
        fence(Ordering::SeqCst);
        if when >= self.sleep_until.load(Ordering::SeqCst) {
            return; // the sleeper wakes earlier anyway
        }
        let sleeper = self
            .timer_sleeper
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        match sleeper {
            Some(parker) => parker.unpark(Handoff::Recheck),
            // Nobody sleeps on timers: if a P is idle, start a thread that
            // will (all-busy Ps run their own timers).
            None => self.wakep(),
        }
    }

    /// The earliest deadline over every heap.
    pub(crate) fn earliest_timer(&self) -> u64 {
        let per_p = self
            .ps
            .iter()
            .map(|p| p.timers.next_when())
            .min()
            .unwrap_or(NEVER);
        per_p.min(self.global_timers.next_when())
    }

    /// The queue the P `p` checks at the top of find-runnable.
    pub(crate) fn own_timers(&self, p: usize) -> &Arc<TimerQueue> {
        match self.policy.timers {
            TimerPlacement::Global => &self.global_timers,
            TimerPlacement::PerP => &self.ps[p].timers,
        }
    }

    /// Runs what firing produced: wakes (into the current P's queue) and
    /// `after_func` callbacks (as tasks, or inline for internal ones).
    pub(crate) fn run_fired(self: &Arc<Self>, fired: Vec<Fired>) {
        for f in fired {
            match f {
                Fired::Wake(w) => w.wake(),
                Fired::Func(f, true) => {
                    crate::runtime::spawn_on(self, async move { f() });
                }
                Fired::Func(f, false) => f(),
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

impl Machine {
    /// Runs the due timers of `q` on the current P; returns how many fired.
    pub(crate) fn run_timers(&mut self, q: &TimerQueue, now: u64) -> usize {
        let mut fired = Vec::new();
        let n = q.run(now, &mut fired);
        if n > 0 {
            bump(&self.sched.ps[self.p()].counters.timers_fired, n as u64);
            let sched = self.sched.clone();
            sched.run_fired(fired);
        }
        n
    }

    /// Step 1 of find-runnable: this P's due timers.
    pub(crate) fn check_own_timers(&mut self) {
        let next = self.sched.own_timers(self.p()).next_when();
        if next == NEVER {
            return; // the common case: one atomic load, no clock read
        }
        let now = self.sched.now();
        if next <= now {
            let q = self.sched.own_timers(self.p()).clone();
            self.run_timers(&q, now);
        }
    }

    /// Parks as the timer sleeper if nobody else is; returns what woke us:
    /// a handoff, or `None` when the deadline passed or a new earlier timer
    /// needs a re-check.
    pub(crate) fn park_as_timer_sleeper(
        &mut self,
        parker: &Arc<Parker>,
    ) -> Option<Option<Handoff>> {
        let sched = self.sched.clone();
        {
            let mut slot = sched
                .timer_sleeper
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            if slot.is_some() {
                return None; // someone else sleeps on timers
            }
            *slot = Some(parker.clone());
        }
        // Publish our deadline, then re-read the heaps (module docs).
        let mut until = sched.earliest_timer();
        loop {
            sched.sleep_until.store(until, Ordering::SeqCst);
            fence(Ordering::SeqCst);
            let again = sched.earliest_timer();
            if again == until {
                break;
            }
            until = again;
        }
        let h = if until == NEVER {
            parker.park(None)
        } else {
            let now = sched.now();
            if until <= now {
                None
            } else {
                parker.park(Some(Duration::from_nanos(until - now)))
            }
        };
        sched.sleep_until.store(NEVER, Ordering::SeqCst);
        *sched
            .timer_sleeper
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = None;
        bump_shared(&sched.counters.timer_sleeper_wakes, 1);
        Some(match h {
            Some(Handoff::Recheck) => None,
            other => other,
        })
    }
}

//! M: a worker thread and its scheduler loop (Go's `mstart`, `schedule`,
//! `execute`, `stopm`).
//!
//! An M alternates between two states: holding a P and running the loop
//! "find a task, poll it", or parked on the idle M list without a P. It is
//! started by `startm` with a P (and told whether it counts as spinning),
//! and it parks when `find_runnable` gives the P back.
//!
//! The thread's context (which runtime, which P it holds) is in
//! `sched/context.rs`.
//!
//! Time slices: a task taken from `runnext` inherits the slice of the task
//! that readied it, so a pair of tasks that wake each other run back to back
//! without counting as new slices. The M bounds the inheritance by count
//! ([`INHERIT_MAX`]) rather than by reading the clock on every poll: after
//! that many inherited polls the ring is served first and the next poll
//! starts a new slice. (A clock read costs ~20 ns per poll, as much as a
//! whole ping-pong hop's scheduling; a counter costs nothing.)

pub(crate) mod block_on;
pub(crate) mod blocking;
pub(crate) mod enter;
pub(crate) mod find;
pub(crate) mod netpoll;
pub(crate) mod park;
pub(crate) mod snooze;
pub(crate) mod stack;
pub(crate) mod stuck;
pub(crate) mod sysmon;

use crate::loom::Ordering;
use crate::rng::Rng;
use crate::sched::backoff::Backoff;
use crate::sched::context::{held_id, held_index, leave, own_queue, set_p, take_p, CTX};
use crate::sched::machine::park::{Handoff, Parker};
use crate::sched::processor::idle::HeldP;
use crate::sched::processor::sampling::SAMPLE_EVERY;
use crate::sched::task::meta::State;
use crate::sched::task::Runnable;
use crate::sched::timer::check::TimerSleep;
use crate::sched::Sched;
use crate::stats::{bump, bump_shared};
use std::sync::Arc;

/// Most consecutive `runnext` polls that share one time slice.
pub(crate) const INHERIT_MAX: u32 = 32;

/// One worker thread's private state.
pub(crate) struct Machine {
    pub(crate) sched: Arc<Sched>,
    pub(crate) parker: Arc<Parker>,
    /// Counted in `nmspinning`.
    pub(crate) spinning: bool,
    /// Consecutive polls that inherited the slice.
    pub(crate) inherited: u32,
    pub(crate) rng: Rng,
    /// Wakers of tasks the sleeper's blocking poll readied, to be woken
    /// once this M has a P (or, with none to be had, into the global queue).
    pub(crate) ready: Vec<std::task::Waker>,
    /// What the last timer run produced, reused so that running timers
    /// allocates nothing in the steady state.
    pub(crate) fired: Vec<crate::sched::timer::Fired>,
    /// The budget each poll starts with (`Policy::preempt`).
    pub(crate) budget: u32,
}

impl Machine {
    /// An M of `sched` with no P yet; `rng` draws its victim order.
    pub(crate) fn new(sched: Arc<Sched>, spinning: bool, rng: Rng) -> Machine {
        let budget = crate::sched::task::coop::poll_budget(&sched.policy);
        Machine {
            sched,
            parker: Arc::new(Parker::new()),
            spinning,
            inherited: 0,
            rng,
            ready: Vec::new(),
            fired: Vec::new(),
            budget,
        }
    }

    /// The id of the P this M holds, for the scheduler loop, which runs
    /// only with one. Without one it is an id out of range, so the first
    /// `sched.ps[..]` with it panics (as a `usize::MAX` sentinel would): a
    /// test here would cost two instructions per call, twice per task.
    /// Code that may run without a P uses [`Machine::held`].
    #[inline]
    pub(crate) fn p(&self) -> usize {
        CTX.with(held_index)
    }

    /// The id of the P this M holds, if any.
    #[inline]
    pub(crate) fn held(&self) -> Option<usize> {
        CTX.with(held_id)
    }

    /// Takes P `p` (Go's `acquirep`).
    pub(crate) fn acquirep(&mut self, p: HeldP) {
        let id = p.id();
        set_p(p);
        crate::sched::trace::proc_start(&self.sched, id);
        let p = &self.sched.ps[id];
        p.stuck.store(false, Ordering::Relaxed);
        // Relaxed: read by the monitor only after it has seen a poll of
        // this M's run past the stuck threshold (machine/stuck.rs).
        p.m_thread.store(
            crate::sched::machine::stack::this_thread(),
            Ordering::Relaxed,
        );
    }

    /// Gives up the P (Go's `releasep`): the caller puts it on the idle list
    /// or hands it to another M.
    pub(crate) fn dropp(&mut self) -> HeldP {
        crate::sched::trace::proc_stop(&self.sched);
        take_p().unwrap_or_else(|| no_p())
    }

    /// The head of this M's local queue (`runnext` first), after something
    /// that may have run wakers: the P is read afresh.
    pub(crate) fn take_local(&mut self) -> Option<Runnable> {
        let p = &self.sched.ps[self.p()];
        // SAFETY: P `p` is in our context (just read); `get` is one ring
        // operation and nothing else runs before the handle is dropped.
        let mut q = unsafe { own_queue(p) };
        q.get(false).map(|(t, _)| t)
    }

    pub(crate) fn next_rand(&mut self) -> u64 {
        self.rng.next_u64()
    }

    /// Stops spinning after finding work; the last spinner wakes a replacement
    /// (Go's `resetspinning`).
    pub(crate) fn reset_spinning(&mut self) {
        self.spinning = false;
        crate::sched::trace::spin_stop(&self.sched);
        self.sched.idle.dec_spinning();
        self.sched.wakep();
    }

    pub(crate) fn become_spinning(&mut self) {
        if !self.spinning {
            self.spinning = true;
            crate::sched::trace::spin_start(&self.sched);
            self.sched.idle.inc_spinning();
        }
    }

    /// Go's `schedule` loop while holding a P. Returns when the P is gone.
    fn schedule_loop(&mut self) {
        loop {
            if self.sched.is_shutdown() {
                let p = self.dropp();
                if self.spinning {
                    self.spinning = false;
                    self.sched.idle.dec_spinning();
                }
                let mut lists = self.sched.idle.lock();
                self.sched.pidleput(&mut lists, p);
                return;
            }
            let Some((task, inherit)) = self.find_runnable() else {
                return; // the P went back to the idle list
            };
            if self.spinning {
                self.reset_spinning();
            }
            self.execute(task, inherit);
            if self.held().is_none() {
                // `block_in_place` gave the P away and could not get one back.
                match self.sched.acquire_idle_p() {
                    Some(p) => self.acquirep(p),
                    None => return,
                }
            }
        }
    }

    /// Go's `execute`: polls one task on the current P.
    fn execute(&mut self, task: Runnable, inherit: bool) {
        let pid = self.p();
        let p = &self.sched.ps[pid];
        let meta = task.metadata();
        meta.set(
            State::Running(Some(pid)),
            crate::sched::timer::clock::coarse(),
        );
        // One poll in SAMPLE_EVERY is timed, and every sampled wake
        // (`runtime/metrics.rs`); the rest read no clock.
        let polls = p.counters.tasks_polled.load(Ordering::Relaxed);
        let woke = meta.take_woken();
        let timed = polls.is_multiple_of(SAMPLE_EVERY);
        let start = if timed || woke.is_some() {
            let now = crate::sched::timer::clock::now();
            if let Some(w) = woke {
                p.metrics.wake_to_run.record(now.saturating_sub(w));
            }
            timed.then_some(now)
        } else {
            None
        };
        let inherit = inherit && self.inherited < INHERIT_MAX;
        if inherit {
            self.inherited += 1;
            bump(&p.counters.runnext_hits, 1);
        } else {
            self.inherited = 0;
            bump(&p.schedtick, 1);
        }
        // The owner's count, read above for the sample (`bump`'s store).
        p.counters
            .tasks_polled
            .store(polls.wrapping_add(1), Ordering::Relaxed);
        crate::sched::task::coop::set_budget(self.budget);
        // Which task this P polls, for the stuck-poll report (stuck.rs):
        // with `tasks_polled` above, it names this poll. Relaxed: a hint.
        p.poll_task.store(meta.id.as_u64(), Ordering::Relaxed);
        task.run();
        if let Some(start) = start {
            // Into the P the poll started on, even if it was handed away.
            p.metrics
                .poll
                .record(crate::sched::timer::clock::now().saturating_sub(start));
        }
        // The P may have changed hands inside the poll (block_in_place).
        if let Some(pid) = self.held() {
            let p = &self.sched.ps[pid];
            if p.is_stuck() {
                p.stuck.store(false, Ordering::Relaxed);
            }
        }
    }

    /// Go's `stopm`: park on the idle M list until handed a P (or told to
    /// exit). One parked M at a time sleeps only until the earliest timer;
    /// when it wakes for one, it takes an idle P to run it.
    pub(crate) fn stopm(&mut self) -> Handoff {
        let parker = self.parker.clone();
        loop {
            let exit = {
                let mut lists = self.sched.idle.lock();
                // Checked under the idle lock: shutdown sets the flag, then
                // takes the lock to wake every M on the list, so we either
                // see the flag or get woken.
                let exit = self.sched.is_shutdown();
                if !exit {
                    lists.ms.push(parker.clone());
                }
                exit
            };
            if exit {
                return self.woken(Handoff::Exit);
            }
            bump_shared(&self.sched.counters.parks, 1);
            crate::sched::trace::m_park(&self.sched);
            let woke = if self.spinning {
                // The watcher (idle.rs, "Hand-off"), still counted as
                // spinning: look again after WATCH (the timeout takes the
                // path below: leave the list, take an idle P, search).
                bump_shared(&self.sched.counters.watches, 1);
                parker.park(Some(crate::sched::processor::idle::WATCH))
            } else {
                match self.park_as_timer_sleeper(&parker) {
                    TimerSleep::Woke(h) => h,
                    TimerSleep::NotSleeper => parker.park(None),
                }
            };
            crate::sched::trace::m_unpark(&self.sched);
            match woke {
                Some(Handoff::Recheck) | None => {}
                Some(h) => return self.woken(h),
            }
            // A timer is due (or a new earlier one was armed): leave the idle
            // list. If we are no longer on it, a waker popped us and its
            // handoff is on the way.
            let removed = {
                let mut lists = self.sched.idle.lock();
                match lists.ms.iter().position(|m| Arc::ptr_eq(m, &parker)) {
                    Some(i) => {
                        lists.ms.swap_remove(i);
                        true
                    }
                    None => false,
                }
            };
            if !removed {
                loop {
                    match parker.park(None) {
                        Some(Handoff::Recheck) | None => continue,
                        Some(h) => return self.woken(h),
                    }
                }
            }
            if self.sched.is_shutdown() {
                return self.woken(Handoff::Exit);
            }
            if let Some(p) = self.sched.acquire_idle_p() {
                // A watcher searches as the spinner it still counts as.
                return Handoff::P {
                    p,
                    spinning: std::mem::take(&mut self.spinning),
                };
            }
            if std::mem::take(&mut self.spinning) {
                // Every P is busy, each with its own `runnext` to run: stop
                // watching. The M that next runs out of work spins and
                // searches (find.rs), as in Go.
                self.sched.idle.dec_spinning();
            }
            // Every P is busy: their owners run their own timers, and the
            // tasks the poller readied go to the global queue.
            if self.has_ready() {
                self.deliver_ready();
            }
        }
    }

    /// The handoff `stopm` returns once woken with `h`. A watcher (still
    /// counted as spinning) keeps one count for the search it is handed a
    /// P for; if the waker counted it as spinning too, one count goes.
    fn woken(&mut self, h: Handoff) -> Handoff {
        if !std::mem::take(&mut self.spinning) {
            return h;
        }
        match h {
            Handoff::P { p, spinning } => {
                if spinning {
                    self.sched.idle.dec_spinning();
                }
                Handoff::P { p, spinning: true }
            }
            other => {
                self.sched.idle.dec_spinning();
                other
            }
        }
    }

    /// A short bounded wait between fruitless searches (seed 000).
    pub(crate) fn backoff(&self) -> Backoff {
        Backoff::new(self.sched.policy.spin)
    }
}

/// The body of a worker thread.
pub(crate) fn m_main(sched: Arc<Sched>, first: Handoff) {
    CTX.with(|c| c.sched.set(Arc::as_ptr(&sched)));
    let rng = Rng::from_entropy(sched.nthreads.load(Ordering::Relaxed));
    let mut m = Machine::new(sched, false, rng);
    let mut next = Some(first);
    loop {
        let h = match next.take() {
            Some(h) => h,
            None => m.stopm(),
        };
        match h {
            Handoff::Exit => {
                m.deliver_ready(); // shutdown: the wakes drop the tasks
                break;
            }
            Handoff::Recheck => {}
            Handoff::P { p, spinning } => {
                // Back from a sleep: the coarse clock may be as old as the
                // sleep (no monitor runs while every P is idle).
                crate::sched::timer::clock::refresh_coarse();
                m.acquirep(p);
                m.spinning = spinning;
                // What our blocking poll readied runs on this P first.
                if m.has_ready() {
                    m.deliver_ready();
                }
                m.schedule_loop();
            }
        }
    }
    CTX.with(leave);
}

#[cold]
#[inline(never)]
fn no_p() -> ! {
    panic!("goro: an M in its scheduler loop without a P (scheduler bug)")
}

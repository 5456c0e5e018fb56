//! Work stealing (Go's `stealWork`, `runqsteal`), with seeds 002 and 004.
//!
//! A spinning M makes up to `Policy::steal_passes` passes over the other Ps,
//! each in a fresh random order (a random start and a random stride coprime
//! with `procs`, so every P is visited exactly once per pass without
//! allocating a permutation). From each victim it takes half of the ring.
//!
//! * Seed 002: Ps whose bit is set in the idle mask are skipped without
//!   touching their queues (an idle P has nothing to steal), and the number
//!   of passes is small (2; Go makes 4, which on large machines can spend a
//!   third of all CPU in the search).
//! * Seed 004: a victim's `runnext` is taken only on the last pass, and if the
//!   victim's M is running a task, only after a short pause: the victim has
//!   probably just readied that task and is about to run it itself, and
//!   stealing it would bounce a pipeline of tasks between Ps. A P that the
//!   monitor marked stuck gets no pause: its M is not coming back soon.
//! * Seed 001: the last pass also runs the due timers of every P that may
//!   have timers (the timer mask: busy Ps and idle Ps with timers) and of
//!   stuck Ps, as Go's `stealWork` does. A task that keeps its P busy (a
//!   spin, a long poll) thus does not hold back the timers it armed: an
//!   idle thread woken for the deadline runs them.

use crate::sched::backoff::{Backoff, Snooze};
use crate::sched::context;
use crate::sched::machine::Machine;
use crate::sched::processor::Processor;
use crate::sched::runq::Local;
use crate::sched::task::Runnable;
use crate::stats::bump;
use std::time::Instant;

impl Machine {
    /// Tries to steal a task for the current P. The P's ring is empty.
    pub(crate) fn steal_work(&mut self) -> Option<Runnable> {
        let sched = self.sched.clone();
        let procs = sched.procs();
        if procs < 2 {
            return None;
        }
        let me = self.p();
        let mine = &sched.ps[me];
        let passes = sched.policy.steal_passes;
        let start = Instant::now();
        let mut now = None;
        let mut found = None;
        // Victims looked at, and those that gave nothing (counted once at
        // the end: `steal_attempts` and `queues_inspected`, `steal_fails`).
        let (mut inspected, mut fails) = (0, 0);
        'passes: for pass in 0..passes {
            let last = pass + 1 == passes;
            let r = self.next_rand();
            let mut pos = (r as usize) % procs;
            let stride = crate::sched::processor::resize::stride((r >> 32) as usize, procs);
            for _ in 0..procs {
                let victim = pos;
                pos = (pos + stride) % procs;
                if victim == me {
                    continue;
                }
                let v = &sched.ps[victim];
                // Last pass: run the due timers of Ps that may have some
                // (timer mask) and of stuck Ps; what they wake lands in our queue.
                if last && (sched.idle.has_timer_bit(victim) || v.is_stuck()) {
                    let next = v.timers.next_when();
                    let now = *now.get_or_insert_with(|| sched.now());
                    if next <= now {
                        let q = v.timers.clone();
                        if self.run_timers(&q, now) > 0 {
                            if let Some(t) = self.take_local() {
                                found = Some(t);
                                break 'passes;
                            }
                        }
                    }
                }
                if sched.policy.idle_mask && sched.idle.is_idle(victim) {
                    continue;
                }
                inspected += 1;
                if last {
                    bump(&mine.counters.steal_attempts_last_pass, 1);
                }
                let mut took_runnext = false;
                // The held P leaves the context for the steal: the pause
                // below runs in its middle, and must not reach our queue
                // (runq.rs, "Who may call what"); with the P out of the
                // context nothing it calls can make a second handle on it.
                let mut held = context::take_p().expect("goro: a thief without a P");
                let stolen = {
                    let mut dst: Local<'_> = held.local(&sched);
                    v.runq.steal_into(&mut dst, last, |_| {
                        took_runnext = self.pause_before_runnext(v, mine);
                        took_runnext
                    })
                };
                context::set_p(held);
                if let Some((task, n)) = stolen {
                    bump(&mine.counters.steals, n as u64);
                    crate::sched::trace::steal(&sched, victim, n);
                    if took_runnext && n == 1 {
                        bump(&mine.counters.runnext_steals, 1);
                    }
                    found = Some(task);
                    break 'passes;
                }
                fails += 1;
            }
        }
        bump(&mine.counters.steal_attempts, inspected);
        bump(&mine.counters.queues_inspected, inspected);
        bump(&mine.counters.steal_fails, fails);
        bump(&mine.counters.steal_ns, start.elapsed().as_nanos() as u64);
        found
    }

    /// Seed 004's pause. Returns whether to go ahead and take `runnext`.
    /// Runs inside a steal into `mine`'s queue: it counts on `mine`, given,
    /// and touches no run queue as owner.
    fn pause_before_runnext(&self, victim: &Processor, mine: &Processor) -> bool {
        let sched = &self.sched;
        let pause = sched.policy.runnext_steal_pause;
        if pause.is_zero() || victim.is_stuck() || sched.idle.is_idle(victim.id) {
            return true;
        }
        bump(&mine.counters.runnext_steal_pauses, 1);
        let deadline = Instant::now() + pause;
        // Wait for the owner to take it (then the thief's grab finds the
        // slot empty or holding another task, and leaves it) or for the
        // pause to end, spinning without ever yielding:
        // the pause is a few microseconds, and a thief that shares a CPU
        // with the victim's busy poll (Linux often wakes it on the waker's
        // CPU, under a hypervisor especially) would hand that poll the CPU
        // for a whole time slice by yielding, and `wake_busy` now and then
        // waits milliseconds (BENCH_RESULTS.md, "Scheduling guarantees",
        // "The pause must not yield").
        let mut b = Backoff::steal_pause();
        let seen = victim.runq.runnext_id();
        while victim.runq.runnext_id() == seen && Instant::now() < deadline {
            if b.snooze() == Snooze::Done {
                b = Backoff::steal_pause();
            }
            bump(&mine.counters.spins, 1);
        }
        true
    }
}

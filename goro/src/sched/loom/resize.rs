//! Loom models of a resize (`resize.rs`) racing with the threads that do
//! not know about it yet: a thread without a P arming a timer on a P
//! picked from the old count, and a thief stealing from the removed P.
//!
//! Planted bugs, each caught (see each model's doc):
//! * `push_on` without its re-check of `procs` after the push (the armer
//!   trusts the count it read before): the timer lands on the removed P's
//!   heap after the retire moved it, and nobody runs that heap ("timer
//!   forgotten on the removed P").
//! * `retire_p` dropping the removed P's queue instead of moving it to the
//!   global queue: "a task was lost".

use crate::loom::thread;
use crate::sched::loom::tests::model_sched_with;
use crate::sched::processor::idle::HeldP;
use crate::sched::task::test_support::{runnable, Log};
use crate::sched::task::Runnable;
use crate::sched::timer::{Action, Callback};
use crate::sched::Sched;
use crate::Policy;
use std::sync::Arc;

/// Two Ps, both taken by (model) Ms: P0 by the thief, P1 by the M that will
/// give it back after the shrink.
fn two_busy_ps() -> (Arc<Sched>, HeldP, HeldP) {
    let sched = model_sched_with(2, Policy::default());
    sched.init_idle();
    let p0 = sched.acquire_idle_p().expect("an idle P");
    let p1 = sched.acquire_idle_p().expect("an idle P");
    assert_eq!((p0.id(), p1.id()), (0, 1));
    (sched, p0, p1)
}

/// A shrink from 2 Ps to 1 while (a) a thread without a P arms a timer that
/// the round-robin places on P1, the P being removed, and (b) a thief on
/// P0 steals from P1's queue, which holds two tasks. P1's holder gives it
/// back after the shrink (`pidleput` retires it: queue to the global
/// queue, timers to P0).
///
/// Afterwards: P1's heap is empty and the timer is on P0's (an active P,
/// where thieves, the owner and the timer sleeper look), and each task was
/// taken exactly once: by the thief, or from the global queue.
///
/// Planted bug, caught: `push_on` without the re-check of `procs` after
/// its push. The armer reads `procs == 2`, the shrink and the retire run,
/// then the armer pushes onto P1's heap: "timer forgotten on the removed
/// P".
#[test]
fn loom_resize_shrink_keeps_a_timer_armed_meanwhile() {
    loom::model(|| {
        let (sched, mut p0, mut p1) = two_busy_ps();
        let log = Log::default();
        // P1's holder queued two tasks before the shrink.
        p1.local(&sched).put(runnable(0, &log), false);
        p1.local(&sched).put(runnable(1, &log), false);
        // The next round-robin pick for a thread without a P is P1.
        sched.timer_rr.store(1, crate::loom::Ordering::Relaxed);

        let s = sched.clone();
        let armer = thread::spawn(move || {
            drop(s.start_timer(Action::Wake(None), Callback::None, 1));
        });
        let s = sched.clone();
        let thief = thread::spawn(move || {
            // On P0, its last pass (runnext included, no pause).
            s.ps[1]
                .runq
                .steal_into(&mut p0.local(&s), true, |_| true)
                .map(|(t, _)| t)
        });
        // The resizer, then P1's holder noticing at its schedule point.
        assert_eq!(sched.resize_to(1, true), 2);
        let retired = {
            let mut lists = sched.idle.lock();
            sched.pidleput(&mut lists, p1)
        };
        assert!(retired, "P1 is out of range: retired, not idled");
        sched.after_retire();

        armer.join().unwrap();
        let stolen = thief.join().unwrap();

        assert_eq!(
            sched.ps[1].timers.len(),
            0,
            "timer forgotten on the removed P"
        );
        assert_eq!(sched.ps[0].timers.len(), 1, "the timer is on the active P");
        let mut taken: Vec<Runnable> = stolen.into_iter().collect();
        taken.extend(sched.ps[0].runq.steal_all());
        taken.extend(sched.ps[1].runq.steal_all());
        taken.extend(sched.global.drain());
        crate::sched::loom::runq::each_taken_once(taken, 2, &log, "resize");
        sched.drain_timers();
    });
}

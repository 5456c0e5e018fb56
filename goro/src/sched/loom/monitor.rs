//! loom models of the monitor's idle sleep (`Monitor::sleep_while_idle`).
//!
//! The deadlock check runs once per idle period; the monitor then sleeps
//! with no timeout until the period ends. A period ends when a P is taken
//! off the idle list or a `block_on` caller parks anew, and either may
//! happen while the monitor is still busy with the previous check, so it
//! never sees a busy P. The idle-period clock (`Idle::activity`) records
//! both; the models check that the monitor, having checked a period,
//! never sleeps through the start of the next one. A sleep through it
//! is a hang: loom reports it as a deadlock.

use super::tests::model_sched_with;
use crate::loom::thread;
use crate::sched::policy::Policy;
use crate::sched::Sched;
use std::sync::Arc;

/// A one-P runtime whose P is idle, and the clock's reading of the idle
/// period the monitor has just checked.
fn idle_after_a_check() -> (Arc<Sched>, u64) {
    let sched = model_sched_with(1, Policy::default());
    {
        let mut lists = sched.idle.lock();
        // SAFETY: the model runtime never handed P 0 out, and it is not on
        // the idle list yet.
        unsafe { sched.idle.pidleput_free(&mut lists, 0, || false) };
    }
    let period = sched.idle.activity();
    (sched, period)
}

/// A `block_on` caller parks while the monitor goes to sleep after its
/// check: the monitor wakes (or does not sleep) to arm the next one.
#[test]
fn loom_monitor_wakes_for_a_new_block_on_wait() {
    loom::model(|| {
        let (sched, period) = idle_after_a_check();
        let s = sched.clone();
        let caller = thread::spawn(move || s.block_on_new_wait());
        sched.monitor.sleep_while_idle(&sched, period, None);
        caller.join().unwrap();
    });
}

/// A P is taken and given back (a task woken by an outside thread runs
/// and ends) while the monitor goes to sleep after its check: it does not
/// sleep through that idle period's end.
#[test]
fn loom_monitor_wakes_for_a_p_taken_and_given_back() {
    loom::model(|| {
        let (sched, period) = idle_after_a_check();
        let s = sched.clone();
        let worker = thread::spawn(move || {
            let p = s.acquire_idle_p().expect("P 0 is idle");
            s.release_p(p);
        });
        sched.monitor.sleep_while_idle(&sched, period, None);
        worker.join().unwrap();
    });
}

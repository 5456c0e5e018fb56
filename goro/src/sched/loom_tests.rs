//! loom models of the run queue and of the spinning/parking protocol.
//!
//! Run with:
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p goro --lib --release loom_`
//!
//! The models drive the production code (`RunQueue`, `Sched::inject`,
//! `Machine::find_runnable`) with loom's atomics, locks and thread-locals;
//! the ring has 4 slots under loom so that overflow is reachable.

use crate::loom::thread;
use crate::runtime::policy::{Policy, SpinPolicy};
use crate::sched::machine::{Machine, CTX};
use crate::sched::park::{Handoff, Parker};
use crate::sched::runq::{Put, RunQueue, RING_SIZE};
use crate::sched::task::test_support::{runnable, Log};
use crate::sched::task::Runnable;
use crate::sched::Sched;
use std::sync::Arc;
use std::time::Duration;

fn run_all(tasks: impl IntoIterator<Item = Runnable>) -> usize {
    tasks.into_iter().map(|t| t.run()).count()
}

/// Every task pushed is run exactly once: by the owner, by the thief, or
/// left in the queue (drained at the end). Covers runnext and its steal.
#[test]
fn loom_runq_owner_and_thief_take_each_task_once() {
    loom::model(|| {
        let log = Log::default();
        let victim = Arc::new(RunQueue::new());
        let thief_q = Arc::new(RunQueue::new());
        let (v, tq) = (victim.clone(), thief_q.clone());
        let thief = thread::spawn(move || {
            let mut n = 0;
            if let Some((t, k)) = tq.steal_into(&v, true, |_| true) {
                t.run();
                n += k;
            }
            n
        });
        victim.put(runnable(0, &log), false);
        victim.put(runnable(1, &log), true);
        let mut owner = 0;
        if let Some((t, _)) = victim.get(false) {
            t.run();
            owner += 1;
        }
        let stolen = thief.join().unwrap();
        let rest = run_all(victim.drain()) + run_all(thief_q.drain());
        let mut ran = log.ran.lock().unwrap().clone();
        ran.sort();
        assert_eq!(
            ran,
            vec![0, 1],
            "each task exactly once (owner {owner}, thief {stolen}, rest {rest})"
        );
    });
}

/// Overflow moves half the ring to the caller while a thief steals: no task
/// is lost or duplicated.
#[test]
fn loom_runq_overflow_races_with_steal() {
    loom::model(|| {
        let log = Log::default();
        let victim = Arc::new(RunQueue::new());
        let thief_q = Arc::new(RunQueue::new());
        for i in 0..RING_SIZE {
            assert!(matches!(victim.put(runnable(i, &log), false), Put::Ring));
        }
        let (v, tq) = (victim.clone(), thief_q.clone());
        let thief = thread::spawn(move || {
            if let Some((t, _)) = tq.steal_into(&v, false, |_| true) {
                t.run();
            }
        });
        let overflow = match victim.put(runnable(RING_SIZE, &log), false) {
            Put::Overflow(batch) => batch,
            _ => Vec::new(),
        };
        thief.join().unwrap();
        run_all(overflow);
        run_all(victim.drain());
        run_all(thief_q.drain());
        let mut ran = log.ran.lock().unwrap().clone();
        ran.sort();
        assert_eq!(
            ran,
            (0..=RING_SIZE).collect::<Vec<_>>(),
            "each task exactly once"
        );
    });
}

fn model_sched(procs: usize) -> Arc<Sched> {
    let mut policy = Policy::default();
    // No spinning rounds or pauses: they only add states, not protocol.
    policy.spin = SpinPolicy::Bounded { spin: 0, yield_: 0 };
    policy.runnext_steal_pause = Duration::ZERO;
    Sched::new(
        procs,
        policy,
        "loom".into(),
        None,
        crate::runtime::DEFAULT_POOL_CYCLE,
    )
}

/// An M holding P `p` with nothing queued, about to look for work and park.
fn going_idle(sched: &Arc<Sched>, p: usize, spinning: bool) -> bool {
    CTX.with(|c| {
        c.sched.set(Arc::as_ptr(sched));
        c.p.set(p);
    });
    let mut m = Machine {
        sched: sched.clone(),
        parker: Arc::new(Parker::new()),
        spinning,
        inherited: 0,
        rng: 7,
        ready: Vec::new(),
        fired: Vec::new(),
    };
    let found = m.find_runnable();
    let got = found.is_some();
    if let Some((t, _)) = found {
        t.run();
    }
    if m.spinning {
        m.reset_spinning();
    }
    CTX.with(|c| {
        c.sched.set(std::ptr::null());
        c.p.set(crate::sched::NO_P);
    });
    got
}

/// No lost wakeup: a task injected from a thread without a P while the only
/// M gives its P up is either found by that M or handed to a started M.
fn no_lost_wakeup(spinning: bool) {
    loom::model(move || {
        let sched = model_sched(1);
        if spinning {
            sched.idle.inc_spinning();
        }
        let log = Log::default();
        let s = sched.clone();
        let l = log.clone();
        let publisher = thread::spawn(move || s.inject(runnable(0, &l)));
        let found = going_idle(&sched, 0, spinning);
        publisher.join().unwrap();
        let started = sched.loom_started.lock().unwrap().clone();
        let queued = sched.global.len();
        assert!(
            found || (queued == 1 && started.iter().any(|h| matches!(h, Handoff::P { .. }))),
            "task stranded: found={found} queued={queued} started={started:?}"
        );
        drop(sched.global.drain());
    });
}

#[test]
fn loom_park_no_lost_wakeup_non_spinning_m() {
    no_lost_wakeup(false);
}

#[test]
fn loom_park_no_lost_wakeup_spinning_m() {
    no_lost_wakeup(true);
}

/// Two Ms going idle at once while a task is injected: someone runs it.
#[test]
fn loom_park_two_ms_and_an_injection() {
    loom::model(|| {
        let sched = model_sched(2);
        let log = Log::default();
        let (s1, s2) = (sched.clone(), sched.clone());
        let l = log.clone();
        let publisher = thread::spawn(move || s1.inject(runnable(0, &l)));
        let other = thread::spawn(move || going_idle(&s2, 1, false));
        let found = going_idle(&sched, 0, false);
        let found_other = other.join().unwrap();
        publisher.join().unwrap();
        let started = sched.loom_started.lock().unwrap().clone();
        let queued = sched.global.len();
        assert!(
            found || found_other || (queued == 1 && !started.is_empty()),
            "task stranded: queued={queued} started={started:?}"
        );
        drop(sched.global.drain());
    });
}

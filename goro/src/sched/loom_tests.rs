//! loom models of the run queue (ring, overflow, `runnext` steal), of the
//! spinning/parking protocol, and of the idle and timer masks.
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

/// Turns every task taken into its raw pointer, checks that no task was
/// taken twice and none was lost, then runs each once. Comparing pointers
/// before running keeps a double take a plain assertion failure instead of
/// a second `from_raw` of a freed task.
fn each_taken_once(taken: Vec<Runnable>, n: usize, log: &Log, what: &str) {
    let mut ptrs: Vec<_> = taken.into_iter().map(|t| t.into_raw()).collect();
    ptrs.sort();
    let before = ptrs.len();
    ptrs.dedup();
    assert_eq!(before, ptrs.len(), "a task was taken twice ({what})");
    assert_eq!(ptrs.len(), n, "a task was lost ({what})");
    for p in ptrs {
        // SAFETY: each pointer came from `into_raw` just above, once (the
        // dedup found no copies), so this is its only owner.
        unsafe { Runnable::from_raw(p) }.run();
    }
    assert_eq!(log.ran.lock().unwrap().len(), n, "every task ran once");
}

/// `runnext` steal (seed 004): a thief on its last pass takes the victim's
/// `runnext` (pause granted) while the owner replaces it (bumping the old
/// occupant to the ring) and then runs what it finds. The ring is empty at
/// the start, so the thief's only way in is the `runnext` CAS, racing the
/// owner's swap in `put` and its CAS in `take_runnext`; once `A` is bumped
/// the thief may also take it from the ring. Each task is taken exactly
/// once: by the thief, by the owner, or left queued.
///
/// Planted bug, caught: `put` replacing `runnext` with a load and a store
/// instead of one swap lets the thief's CAS take `A` between them while the
/// owner also bumps `A` to the ring ("a task was taken twice").
#[test]
fn loom_runq_runnext_steal_races_owner_replace_and_run() {
    loom::model(|| {
        let log = Log::default();
        let victim = Arc::new(RunQueue::new());
        let thief_q = Arc::new(RunQueue::new());
        assert!(matches!(victim.put(runnable(0, &log), true), Put::Runnext));
        let (v, tq) = (victim.clone(), thief_q.clone());
        let thief = thread::spawn(move || {
            // The last pass, with the pause over (it only waits, and loom
            // explores the owner acting at every point of the steal anyway).
            tq.steal_into(&v, true, |_| true).map(|(t, _)| t)
        });
        // The running task wakes B: it goes to runnext, A (unless the thief
        // has it already) to the ring.
        let _ = victim.put(runnable(1, &log), true);
        // The poll returns: the owner takes its next task.
        let mut taken: Vec<Runnable> = victim.get(false).map(|(t, _)| t).into_iter().collect();
        taken.extend(thief.join().unwrap());
        taken.extend(victim.drain());
        taken.extend(thief_q.drain());
        each_taken_once(taken, 2, &log, "runnext steal");
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

/// The idle mask (seed 002) never hides a P with work. The only spinning
/// M gives up P0 and re-checks every P's queue, skipping Ps marked idle,
/// while another M takes an idle P off the list (clearing its idle bit,
/// concurrently with the re-check), pushes a task to that P's ring and calls
/// `wakep`. Which P it gets depends on the race: P1 (idle from the start)
/// or P0 just given up. Either the spinning M finds the task, or a spinning
/// M is started for it: a runnable task never waits while a P sits idle
/// and nobody looks for work.
///
/// Planted bug, caught: `pidleget` not clearing the P's idle bit (a P taken
/// off the idle list stays "idle" in the mask), so the thief skips the
/// publisher's P in its steal and its re-check while the publisher's
/// `wakep` saw no idle P or a spinner not yet gone ("task stranded").
#[test]
fn loom_idle_mask_never_hides_a_busy_p_with_work() {
    loom::model(|| {
        let sched = model_sched(2);
        sched.init_idle(); // both idle bits set
        assert_eq!(sched.acquire_idle_p(), Some(0), "P0 for the spinning M");
        sched.idle.inc_spinning();
        let log = Log::default();
        let (s, l) = (sched.clone(), log.clone());
        let publisher = thread::spawn(move || {
            // An M handed an idle P (say, back from `block_in_place`): its
            // task spawns one, to the ring (a task in `runnext` is run by
            // this M itself and wakes nobody, by design).
            let p = s.acquire_idle_p()?;
            s.runqput(&s.ps[p], runnable(0, &l), false);
            Some(p)
        });
        let found = going_idle(&sched, 0, true);
        let p = publisher.join().unwrap();
        let started = sched.loom_started.lock().unwrap().clone();
        let queued = p.map_or(0, |p| sched.ps[p].runq.len());
        assert!(
            found
                || (queued == 1
                    && started
                        .iter()
                        .any(|h| matches!(h, Handoff::P { spinning: true, .. }))),
            "task stranded on P{p:?}: found={found} queued={queued} started={started:?}"
        );
    });
}

/// A runtime of `procs` Ps with every P taken by a (model) M, through the
/// real idle transitions: `init_idle` sets every P's idle-mask bit and
/// `acquire_idle_p` clears it again (and sets its timer-mask bit).
fn all_ps_busy(procs: usize) -> Arc<Sched> {
    let sched = model_sched(procs);
    sched.init_idle();
    for _ in 0..procs {
        let p = sched.acquire_idle_p().expect("an idle P");
        assert!(!sched.idle.is_idle(p), "a taken P is not marked idle");
    }
    sched
}

/// The timer mask never hides an idle P's timers: P1's M gives P1 up with
/// an empty heap while a thread outside the runtime arms a timer that lands
/// on P1 (round-robin placement). Thieves on their last pass run the due
/// timers only of Ps whose timer bit is set, and the timer sleeper, woken
/// at the deadline, takes *some* idle P (the top of the idle stack), so an
/// idle P with timers and no bit may never have them run. Once both are
/// done, an idle P with timers must have its bit set.
///
/// This model found a real bug (fixed in `Idle::pidleput` and
/// `Sched::push_on`): the P's M read the heap as empty, the armer pushed
/// and then saw the P not yet idle so set no bit, and the bit ended clear.
/// Planted bugs, each caught ("timers hidden"): (a) `push_on` setting the
/// bit only when the P looks idle (the original code); (b) `pidleput`
/// reading the heap before clearing the bit; (c) the clear and the set both
/// `Relaxed` (the clear no longer sees the push that preceded the set).
#[test]
fn loom_timer_mask_never_hides_an_idle_ps_timers() {
    use crate::time::timer::{Action, Callback};
    loom::model(|| {
        let sched = all_ps_busy(2);
        // The next round-robin pick (for a thread without a P) is P1.
        sched.timer_rr.store(1, crate::loom::Ordering::Relaxed);
        let s = sched.clone();
        let armer = thread::spawn(move || {
            // No P on this thread: `arm_queue` picks P1.
            drop(s.start_timer(Action::Wake(None), Callback::None, 1));
        });
        {
            let mut lists = sched.idle.lock();
            sched.pidleput(&mut lists, 1);
        }
        armer.join().unwrap();
        let idle = sched.idle.is_idle(1);
        let timers = sched.ps[1].timers.len();
        let bit = sched.idle.has_timer_bit(1);
        sched.drain_timers();
        assert!(
            !idle || timers == 0 || bit,
            "timers hidden: P1 idle={idle} with {timers} timers and timer bit={bit}"
        );
    });
}

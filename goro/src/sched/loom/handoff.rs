//! loom models of the hand-off (a task put into a busy P's `runnext`,
//! `idle.rs` "Hand-off") and of the requeue of a preempted task
//! (`coop.rs`, `Sched::runqput_yield`).
//!
//! Run with:
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 CARGO_TARGET_DIR=target/loom cargo test -p goro --release --lib loom_handoff_`
//!
//! (`loom_` runs them with every other model, as `.ci/run` does.)
//!
//! # What each model guards
//!
//! * `loom_handoff_no_lost_handoff_{watch,eager}`: a task put into a busy
//!   P's `runnext` (production `runqput(next = true)` and
//!   `wake_for_runnext`) while the only spinner gives its P up (production
//!   `find_runnable`) is covered: taken by the spinner, or a spinning M was
//!   started, or (`Watch`) the spinner is left as the watcher, still
//!   counted in `nmspinning`.
//! * `loom_handoff_watcher_count{,_non_spinning_handoff}`: a watcher
//!   (production `stopm`) woken by `startm(p, spinning = true / false)`
//!   while its timeout fires leaves `nmspinning` equal to the Ms that think
//!   they spin (`Machine::woken`).
//! * `loom_handoff_preempted_task_requeued_while_its_waker_fires`: a task
//!   preempted at a safe point (production `consume_budget`, the task's
//!   wake-while-running, `Sched::schedule`) while a thread without a P
//!   wakes it: queued exactly once, at the tail of its P's ring, nobody
//!   woken for it, run once to completion.
//!
//! # Planted bugs (each reverted)
//!
//! | plant | caught by |
//! |---|---|
//! | watcher path: no second re-check after `dec_spinning` | `no_lost_handoff_watch` ("hand-off lost", iteration 1); `_eager` passes (path not taken) |
//! | `wake_for_runnext` calls no `wakep_published` (`Off`) | both `no_lost_handoff` models |
//! | no SeqCst fence after the give-up's `dec_spinning` | `no_lost_handoff_eager`; `_watch` passes, rightly: the watcher's fence after its own decrement covers it |
//! | `runnext` swap `Relaxed` | not caught, and cannot be: see "loom and the `runnext` swap" |
//! | `woken` not dropping the waker's extra count | `watcher_count` (nmspinning 2, one M spins) |
//! | `woken` passing a `spinning: false` handoff on (the watcher's count leaks) | `watcher_count_non_spinning_handoff` (nmspinning 1, no M spins) |
//! | `stopm`'s timeout path handing `spinning: false` while keeping the count | `watcher_count` (nmspinning 2, one M spins) |
//! | a yield sent to `runqput` (`runnext`) instead of `runqput_yield` | `preempted_task...` ("a yield never goes to runnext") |
//! | `runqput_yield` calling `wakep` | `preempted_task...` ("a yield wakes nobody") |
//! | a yield sent to the global queue | `preempted_task...` (not at the tail of P0's ring) |
//!
//! # Cost (release build, one model per test run, on the shared 2-core VM)
//!
//! | model | bound 3 | bound 4 |
//! |---|---|---|
//! | `no_lost_handoff_watch` | 251 iterations, 0.02 s | 727, 0.05 s |
//! | `no_lost_handoff_eager` | 224, 0.02 s | 646, 0.05 s |
//! | `watcher_count` | 1,912, 0.16 s | 7,398, 0.62 s |
//! | `watcher_count_non_spinning_handoff` | 1,912, 0.10 s | 7,398, 0.33 s |
//! | `preempted_task...` | 14, < 0.01 s | 16, < 0.01 s |
//!
//! # loom and the `runnext` swap
//!
//! Production relies on the swap in `RunQueue::put` being a SeqCst
//! read-modify-write: the checker's SeqCst fence after its `dec_spinning`
//! then orders the swap before its re-check (C++20 [atomics.order] 4.3;
//! the putter's SeqCst load of `nmspinning` read the count from before the
//! decrement, so swap < load < decrement < fence in the single order S).
//! loom 0.7 does not model that rule: SeqCst accesses are AcqRel to it
//! (`rt::thread::Set::seq_cst` is a no-op, "may fail to model correct
//! code"); only SeqCst fences are ordered among themselves. Without help,
//! loom reports a lost hand-off at its first iteration (both models, the
//! re-check reading a stale null `runnext`) that Rust's memory model
//! forbids. So `Sched::wake_for_runnext` issues a SeqCst fence under
//! `cfg(loom)` only, standing in for the swap's SeqCst; real builds have
//! none. The consequence: these models check everything on the idle side
//! and the putter's decision, but cannot check the swap's ordering itself
//! (a `Relaxed` swap passes here); that rests on the argument above.
//!
//! # Limits
//!
//! * Under loom a timed park is untimed: `watcher_count` delivers the
//!   watcher's timeout as a `Handoff::Recheck` from a third thread, which
//!   `stopm` treats as a timeout and which, like a real timeout, never
//!   displaces a handoff already in the slot.
//! * The task's state word (`sched/task/raw/`) is in std atomics that
//!   loom does not see in this model, so each of its transitions is one step and loom finds no
//!   conflict between the outside wake and the run. A loom atomic probe
//!   (`phase`) read just before the outside wake makes loom try it before
//!   the poll, during it and after the requeue; the test checks that all
//!   three were explored. The races inside the task's state word (wake vs
//!   the end of a poll) are the task's own model's to prove (`raw/loom.rs`,
//!   `--cfg loom_task`); this one checks the queues around it.

use crate::loom::thread;
use crate::sched::loom::tests::{model_sched_with, on_p, runqput_here};
use crate::sched::machine::park::Handoff;
use crate::sched::machine::Machine;
use crate::sched::policy::Policy;
use crate::sched::processor::idle::HeldP;
use crate::sched::task::test_support::{runnable, Log};
use crate::sched::Sched;
use crate::RunnextWake;
use std::sync::Arc;

/// A runtime of `procs` Ps, all idle, under `wake`. No spinning rounds and
/// no thief's pause (they add states, not protocol; under loom the pause
/// only waits, and the owner acts at every point of a steal anyway).
fn model_sched(procs: usize, wake: RunnextWake) -> Arc<Sched> {
    let sched = model_sched_with(
        procs,
        Policy {
            runnext_wake: wake,
            ..Policy::default()
        },
    );
    sched.init_idle();
    sched
}

fn machine(sched: &Arc<Sched>, spinning: bool) -> Machine {
    Machine::new(sched.clone(), spinning, crate::rng::Rng::new(7))
}

/// How a spinning M's `find_runnable` ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Search {
    /// It found a task (and ran it, then stopped spinning as
    /// `schedule_loop` does).
    Ran,
    /// It gave its P up and is left as the watcher: still counted in
    /// `nmspinning`, on its way to `stopm`'s timed park.
    Watcher,
    /// It gave its P up and stopped spinning: it parks for good.
    Parked,
}

/// A spinning M holding P `p` with nothing queued: the production
/// `find_runnable`, then what `schedule_loop` does with its answer.
fn spinner_searches(sched: &Arc<Sched>, p: HeldP) -> Search {
    on_p(sched, p, || {
        let mut m = machine(sched, true);
        match m.find_runnable() {
            Some((t, _)) => {
                if m.spinning {
                    m.reset_spinning();
                }
                t.run();
                Search::Ran
            }
            None if m.spinning => Search::Watcher,
            None => Search::Parked,
        }
    })
    .0
}

/// Model 1, no lost hand-off. P0's M runs a task that readies another: the
/// production `runqput(next = true)` puts it into P0's empty `runnext` and
/// calls `wake_for_runnext`. Meanwhile the only spinning M, on P1, finds
/// nothing (the put may land at any point of its search), gives P1 up and
/// re-checks. P0's poll keeps running, so the task must be covered by
/// someone else: the spinner took it (steal, pause granted), or the putter
/// started a spinning M, or the spinner is left as the watcher (still
/// counted, so it looks again after `WATCH`). Never: the task in P0's
/// `runnext`, nobody started, nobody watching.
fn no_lost_handoff(wake: RunnextWake) {
    loom::model(move || {
        let sched = model_sched(2, wake);
        let p0 = sched.acquire_idle_p().expect("an idle P");
        assert_eq!(p0.id(), 0, "P0: the busy M");
        let p1 = sched.acquire_idle_p().expect("an idle P");
        assert_eq!(p1.id(), 1, "P1: the spinner");
        sched.idle.inc_spinning();
        let log = Log::default();
        let (s, l) = (sched.clone(), log.clone());
        let putter = thread::spawn(move || {
            on_p(&s, p0, || runqput_here(&s, runnable(0, &l), true));
        });
        let search = spinner_searches(&sched, p1);
        putter.join().unwrap();
        let ran = log.ran.lock().unwrap().len();
        let in_runnext = sched.ps[0].runq.has_runnext();
        let started = std::mem::take(&mut *sched.loom_started.lock().unwrap());
        let a_spinner_started = started
            .iter()
            .any(|h| matches!(h, Handoff::P { spinning: true, .. }));
        let nmspinning = sched.idle.nmspinning();
        let watching = search == Search::Watcher && nmspinning > 0;
        assert_eq!(ran + in_runnext as usize, 1, "the task ran or waits, once");
        assert!(
            ran == 1 || a_spinner_started || watching,
            "hand-off lost ({wake:?}): task in P0's runnext, search {search:?}, \
             nmspinning {nmspinning}, started {started:?}"
        );
        if wake == RunnextWake::Eager {
            assert_ne!(search, Search::Watcher, "no watcher under Eager");
        }
        for p in sched.ps.iter() {
            for t in p.runq.steal_all() {
                t.run();
            }
        }
    });
}

#[test]
fn loom_handoff_no_lost_handoff_watch() {
    no_lost_handoff(RunnextWake::Watch);
}

#[test]
fn loom_handoff_no_lost_handoff_eager() {
    no_lost_handoff(RunnextWake::Eager);
}

/// Model 2, the watcher's count. A watcher (counted in `nmspinning`,
/// parked in the production `stopm`) times out while a waker takes an idle
/// P and `startm`s it, with `Handoff::P { spinning: true }` (having counted
/// a spinner of its own, as `wakep` does) or `spinning: false` (as
/// `handoffp` does for a P with work): the waker may pop the watcher (which
/// then gets the handoff, before or after its timeout, and `woken` keeps
/// exactly one count) or find the list empty (the watcher left it on its
/// timeout and takes the other idle P itself; the waker starts a new M).
/// The timeout is a `Handoff::Recheck` from a third thread (under loom a
/// timed park is untimed; `stopm` treats a re-check as a timeout and
/// `unpark` never lets it displace a real handoff, as a real timeout
/// returns a handoff already there). Afterwards `nmspinning` equals the
/// number of Ms that think they spin: no leak, no underflow.
///
/// `spinning: true` to a counted watcher needs `nmspinning` to be 0 at the
/// waker's claim (`try_claim_spinner`, `claim_first_spinner`), which a
/// parked watcher's own count prevents, so production reaches that branch
/// of `woken` only if some other path lost a count; the model builds the
/// state by hand to check the branch anyway.
fn watcher_count(waker_spinning: bool) {
    loom::model(move || {
        let sched = model_sched(3, RunnextWake::Watch);
        let p0 = sched.acquire_idle_p().expect("an idle P");
        assert_eq!(p0.id(), 0, "P0: a busy M");
        let mut w = machine(&sched, true);
        sched.idle.inc_spinning(); // the watcher's count
        let parker = w.parker.clone();
        let s = sched.clone();
        let waker = thread::spawn(move || {
            // wakep's accounting: count the spinner, take a P, start it.
            if waker_spinning {
                s.idle.inc_spinning();
            }
            let p = s.acquire_idle_p().expect("an idle P");
            s.startm(p, waker_spinning);
        });
        let timeout = thread::spawn(move || parker.unpark(Handoff::Recheck));
        let h = w.stopm();
        waker.join().unwrap();
        timeout.join().unwrap();
        let watcher_spins = match &h {
            Handoff::P { spinning, .. } => *spinning as usize,
            other => panic!("the watcher got {other:?}"),
        };
        assert!(!w.spinning, "stopm hands the count over in its answer");
        let started = std::mem::take(&mut *sched.loom_started.lock().unwrap());
        let started_spinning = started
            .iter()
            .filter(|h| matches!(h, Handoff::P { spinning: true, .. }))
            .count();
        assert_eq!(
            sched.idle.nmspinning(),
            watcher_spins + started_spinning,
            "nmspinning vs Ms that spin: watcher got {h:?}, started {started:?}"
        );
        // P0, the watcher's P and each started M's P, once each.
        let held = 2 + started.len();
        assert_eq!(sched.idle.npidle(), 3 - held, "every P taken at most once");
        drop(p0);
    });
}

#[test]
fn loom_handoff_watcher_count() {
    watcher_count(true);
}

#[test]
fn loom_handoff_watcher_count_non_spinning_handoff() {
    watcher_count(false);
}

/// Model 3, a preempted task requeued while its waker fires. A task runs
/// on P0 with its budget spent: its `consume_budget` safe point wakes the
/// task and returns `Pending` (the production preemption path), so
/// the task reschedules it through `Sched::schedule` with
/// `woken_while_running`, which sends it to `runqput_yield`. Meanwhile a
/// thread without a P wakes the same task through a waker it holds (a
/// message arrived), before, during or after that poll. P1 is idle and
/// nobody spins, so any `wakep` would start an M. Afterwards the task is
/// queued exactly once, at the tail of P0's ring (a yield: not `runnext`,
/// not the global queue), no thread was woken for it, and running it once
/// completes it.
///
/// The limit: the task's state word (running, scheduled, the
/// wake-while-running flag) lives in std atomics that loom does not see,
/// so each of its transitions runs as one step; loom interleaves the outside
/// wake only at goro's own synchronisation points (the P's queue, the
/// global queue, the idle counters, a loom yield inside the poll that
/// stands for the task's work before its safe point). What this model
/// checks is what goro owns: where `Sched::schedule` sends each wake and
/// that the yield path neither double-queues nor wakes a thread.
#[test]
fn loom_handoff_preempted_task_requeued_while_its_waker_fires() {
    use crate::loom::{AtomicUsize as LoomUsize, Ordering as LoomOrdering};
    use std::collections::BTreeSet;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    // The phases of the run the outside wake was seen to land in, over all
    // interleavings: before the poll, during it, after the requeue.
    static SEEN: Mutex<BTreeSet<usize>> = Mutex::new(BTreeSet::new());
    loom::model(|| {
        let sched = model_sched(2, RunnextWake::Watch);
        let p0 = sched.acquire_idle_p().expect("an idle P");
        assert_eq!(p0.id(), 0, "P0: the task's M");
        let polls = Arc::new(AtomicUsize::new(0));
        let done = Arc::new(AtomicUsize::new(0));
        // The probe: loom sees the task's wake as independent of
        // everything (its atomics are std's), so the outside thread reads
        // this loom atomic just before it wakes, and loom explores the wake
        // against each store of it.
        let phase = Arc::new(LoomUsize::new(0));
        let (pl, dn, ph) = (polls.clone(), done.clone(), phase.clone());
        let (runnable, handle) = crate::sched::task::new_task(
            sched.clone(),
            async move {
                pl.fetch_add(1, Ordering::SeqCst);
                // The task's work before its safe point: the outside wake may
                // land here, while the task runs.
                ph.store(1, LoomOrdering::SeqCst);
                crate::sched::task::coop::consume_budget().await;
                dn.fetch_add(1, Ordering::SeqCst);
            },
            crate::sched::task::Spawn {
                location: std::panic::Location::caller(),
                name: None,
                p: None,
                parent: crate::sched::task::meta::Parent::SPAWNER,
            },
        );
        drop(handle); // detached
        let waker = runnable.waker();
        let ph = phase.clone();
        let outside = thread::spawn(move || {
            let seen = ph.load(LoomOrdering::SeqCst);
            waker.wake();
            seen
        });
        let ((), p0) = on_p(&sched, p0, || {
            crate::sched::task::coop::set_budget(0);
            runnable.run();
            crate::sched::task::coop::set_budget(crate::sched::task::coop::UNLIMITED);
        });
        let mut p0 = p0.expect("the poll keeps P0");
        phase.store(2, LoomOrdering::SeqCst);
        let seen = outside.join().unwrap();
        SEEN.lock().unwrap().insert(seen);
        assert_eq!(polls.load(Ordering::SeqCst), 1, "polled once so far");
        assert_eq!(done.load(Ordering::SeqCst), 0, "preempted, not done");
        let q0 = &sched.ps[0].runq;
        assert!(!q0.has_runnext(), "a yield never goes to runnext");
        assert_eq!(q0.len(), 1, "the task at the tail of P0's ring");
        assert!(sched.global.is_empty(), "not in the global queue too");
        let started = sched.loom_started.lock().unwrap();
        assert!(started.is_empty(), "a yield wakes nobody: {started:?}");
        drop(started);
        // P0's M runs it again: it completes, and nothing is left queued.
        let mut queued = p0.local(&sched).drain();
        queued.extend(sched.global.drain());
        assert_eq!(queued.len(), 1, "exactly one queued Runnable");
        on_p(&sched, p0, || {
            for t in queued {
                t.run();
            }
        });
        assert_eq!(done.load(Ordering::SeqCst), 1, "ran to completion once");
        assert!(q0.is_empty() && sched.global.is_empty(), "nothing requeued");
    });
    let seen = SEEN.lock().unwrap().clone();
    assert_eq!(seen, BTreeSet::from([0, 1, 2]), "every phase explored");
}

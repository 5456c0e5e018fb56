//! loom models of the spinning/parking protocol, of the idle and timer masks, and of the
//! timer sleeper hand-off.
//!
//! Run with:
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p goro --lib --release loom_`
//!
//! The models drive the production code (`RunQueue`, `Sched::inject`,
//! `Machine::find_runnable`, `Sched::timer_added`,
//! `Sched::become_timer_sleeper`) with loom's atomics, locks and thread-locals;
//! the ring has 4 slots under loom so that overflow is reachable.

use crate::loom::thread;
use crate::sched::context::{current_p, set_p, take_p, CTX};
use crate::sched::machine::park::{Handoff, Parker};
use crate::sched::machine::Machine;
use crate::sched::policy::{Policy, SpinPolicy};
use crate::sched::processor::idle::HeldP;
use crate::sched::runq::Local;
use crate::sched::task::test_support::{runnable, Log};
use crate::sched::task::Runnable;
use crate::sched::Sched;
use std::sync::Arc;
use std::time::Duration;

fn model_sched(procs: usize) -> Arc<Sched> {
    model_sched_with(procs, Policy::default())
}

/// A runtime of `procs` Ps (not yet idle) under `policy`, less spinning
/// rounds and pauses: they only add states, not protocol.
pub(super) fn model_sched_with(procs: usize, policy: Policy) -> Arc<Sched> {
    let policy = Policy {
        spin: SpinPolicy::Bounded { spin: 0, yield_: 0 },
        runnext_steal_pause: Duration::ZERO,
        ..policy
    };
    Sched::new(
        procs,
        policy,
        "loom".into(),
        None,
        std::time::Duration::from_secs(1), // the builder's default pool cycle
        false,
    )
}

/// An M holding P `p` with nothing queued, about to look for work and park.
fn going_idle(sched: &Arc<Sched>, p: HeldP, spinning: bool) -> bool {
    CTX.with(|c| c.sched.set(Arc::as_ptr(sched)));
    set_p(p);
    let mut m = Machine::new(sched.clone(), spinning, crate::rng::Rng::new(7));
    let found = m.find_runnable();
    let got = found.is_some();
    if let Some((t, _)) = found {
        t.run();
    }
    if m.spinning {
        m.reset_spinning();
    }
    drop(take_p()); // still held if it found work: the model ends here
    CTX.with(|c| c.sched.set(std::ptr::null()));
    got
}

/// A held P for P `p` of a model runtime whose Ps were never put on the
/// idle list (`model_sched` does not): minted directly, with no idle list
/// to take it from.
fn model_p(sched: &Sched, p: usize) -> HeldP {
    assert!(sched.idle.lock().ps.is_empty(), "the idle list is empty");
    // SAFETY: no P of this runtime was ever on its idle list (checked), and
    // each model calls this once per P.
    unsafe { HeldP::for_model(p) }
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
        let p0 = model_p(&sched, 0);
        let found = going_idle(&sched, p0, spinning);
        publisher.join().unwrap();
        let started = std::mem::take(&mut *sched.loom_started.lock().unwrap());
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
        let (p0, p1) = (model_p(&sched, 0), model_p(&sched, 1));
        let publisher = thread::spawn(move || s1.inject(runnable(0, &l)));
        let other = thread::spawn(move || going_idle(&s2, p1, false));
        let found = going_idle(&sched, p0, false);
        let found_other = other.join().unwrap();
        publisher.join().unwrap();
        let started = std::mem::take(&mut *sched.loom_started.lock().unwrap());
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
        let p0 = sched.acquire_idle_p().expect("an idle P");
        assert_eq!(p0.id(), 0, "P0 for the spinning M");
        sched.idle.inc_spinning();
        let log = Log::default();
        let (s, l) = (sched.clone(), log.clone());
        let publisher = thread::spawn(move || {
            // An M handed an idle P (say, back from `block_in_place`): its
            // task spawns one, to the ring (a task in `runnext` is run by
            // this M itself and wakes nobody, by design).
            let mut held = s.acquire_idle_p()?;
            let p = held.id();
            s.runqput(&s.ps[p], &mut held.local(&s), runnable(0, &l), false);
            Some(p)
        });
        let found = going_idle(&sched, p0, true);
        let p = publisher.join().unwrap();
        let started = std::mem::take(&mut *sched.loom_started.lock().unwrap());
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
/// `acquire_idle_p` clears it again (and sets its timer-mask bit). The
/// held Ps come back in id order.
fn all_ps_busy(procs: usize) -> (Arc<Sched>, Vec<HeldP>) {
    let sched = model_sched(procs);
    sched.init_idle();
    let mut held = Vec::new();
    for _ in 0..procs {
        let p = sched.acquire_idle_p().expect("an idle P");
        assert!(!sched.idle.is_idle(p.id()), "a taken P is not marked idle");
        held.push(p);
    }
    held.sort_by_key(|p| p.id());
    (sched, held)
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
    use crate::sched::timer::{Action, Callback};
    loom::model(|| {
        let (sched, mut held) = all_ps_busy(2);
        let p1 = held.pop().expect("P1");
        // The next round-robin pick (for a thread without a P) is P1.
        sched.timer_rr.store(1, crate::loom::Ordering::Relaxed);
        let s = sched.clone();
        let armer = thread::spawn(move || {
            // No P on this thread: `arm_queue` picks P1.
            drop(s.start_timer(Action::Wake(None), Callback::None, 1));
        });
        {
            let mut lists = sched.idle.lock();
            sched.pidleput(&mut lists, p1);
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

// ---------------------------------------------------------------------------
// The timer sleeper hand-off (`Sched::timer_added` against
// `Sched::become_timer_sleeper`, see `timers.rs`).
//
// The invariant: a timer armed while an M is on its way to sleep as the
// timer sleeper (or while no M is the sleeper) always has a thread that
// will wake by its deadline: the sleeper's own deadline is no later (its
// re-read of the heaps saw the timer), or the armer saw the sleeper's
// deadline and broke its sleep (`Handoff::Recheck`), or an M going idle saw
// both and broke it, or a `wakep` started an M (which re-reads every heap
// before it parks again).
//
// The deadlines live on a virtual clock far beyond the real one, so no M's
// own timer run (`check_own_timers`, a thief's last pass) ever finds them
// due and runs them out from under the sleeper; only the model's sleeper
// compares its deadline with `SOON`. A sleeper whose deadline is later
// than the armed timer sleeps until something breaks its sleep (under loom
// a timed wait is untimed anyway, see `park.rs`); if nothing does, loom
// reports the deadlock: that is the failure these models look for.
// ---------------------------------------------------------------------------

use crate::sched::timer::queue::{push, TimerQueue};
use crate::sched::timer::{Action, Callback, TimerInner, NEVER};

/// The timer armed during the model (and, in the first model, the deadline
/// the sleeper slept until before it).
const SOON: u64 = 1 << 60;
/// The sleeper's deadline without the new timer.
const LATER: u64 = 1 << 61;

/// Puts a timer for `when` on `q` (set-up, before any model thread runs).
fn timer_on(q: &Arc<TimerQueue>, when: u64) {
    let t = TimerInner::new_at(Action::Wake(None), Callback::None, q.clone(), when);
    assert!(push(q, &t).is_some() || q.next_when() <= when);
}

/// How one M's turn at `park_as_timer_sleeper` ended.
#[derive(Debug, PartialEq, Eq)]
enum Slept {
    /// Another M was the sleeper: this one checked that one's deadline
    /// against the heaps and would park on the idle M list.
    NotSleeper,
    /// Slept until this deadline, no later than `SOON`: it wakes for the
    /// timer on its own.
    Covers(u64),
    /// Slept towards this deadline, later than `SOON`, and was woken.
    Woken(Handoff, u64),
}

/// `Machine::park_as_timer_sleeper` on the model's clock: the real
/// hand-off and the real wake-up, around a sleep that ends by itself only
/// if its deadline is no later than `SOON`.
fn sleep_as_timer_sleeper(sched: &Sched, parker: &Arc<Parker>) -> Slept {
    let Some(until) = sched.become_timer_sleeper(parker) else {
        return Slept::NotSleeper;
    };
    let slept = if until <= SOON {
        Slept::Covers(until)
    } else {
        let h = parker
            .park(None)
            .expect("an untimed park returns a handoff");
        Slept::Woken(h, until)
    };
    sched.end_timer_sleep();
    slept
}

/// Whether a `wakep` started an M (under loom, `spawn_m` records it).
fn an_m_was_started(sched: &Sched) -> bool {
    sched
        .loom_started
        .lock()
        .unwrap()
        .iter()
        .any(|h| matches!(h, Handoff::P { .. }))
}

/// Checks the end state of a timer-sleeper model: every turn ended in a
/// way the invariant allows, the timer is covered, and nobody is left
/// published as the sleeper. `started`: a `wakep` started an M, after
/// which the model ended any long sleep with `Handoff::Exit`.
fn timer_is_covered(sched: &Sched, turns: &[Slept], started: bool) {
    for t in turns {
        match t {
            Slept::NotSleeper | Slept::Covers(_) | Slept::Woken(Handoff::Recheck, _) => {}
            Slept::Woken(Handoff::Exit, _) if started => {}
            other => panic!("unexpected end of a sleep: {other:?} (turns {turns:?})"),
        }
        if let Slept::Covers(until) = *t {
            assert!(until <= SOON, "{turns:?}");
        }
    }
    let covered = started
        || turns
            .iter()
            .any(|t| matches!(t, Slept::Covers(_) | Slept::Woken(Handoff::Recheck, _)));
    assert!(
        covered,
        "timer not covered: turns {turns:?}, started {started}"
    );
    assert_eq!(
        sched.sleep_until.load(crate::loom::Ordering::SeqCst),
        NEVER,
        "a sleeper is still published"
    );
    assert!(sched.timer_sleeper.lock().unwrap().is_none());
}

/// Runs `f` on the current (model) thread as an M holding P `p` (in its
/// context, as an M holds it); returns what `f` returned and the held P,
/// unless `f` gave it up.
pub(super) fn on_p<R>(sched: &Arc<Sched>, p: HeldP, f: impl FnOnce() -> R) -> (R, Option<HeldP>) {
    CTX.with(|c| c.sched.set(Arc::as_ptr(sched)));
    set_p(p);
    let r = f();
    let p = take_p();
    CTX.with(|c| c.sched.set(std::ptr::null()));
    (r, p)
}

/// `Sched::runqput` on the P the current model thread holds in its
/// context, the way `Sched::schedule` reaches it.
pub(super) fn runqput_here(sched: &Sched, task: Runnable, next: bool) {
    let p = current_p(sched).expect("on a P");
    let pp = &sched.ps[p];
    // SAFETY: P `p` is in this thread's context (just read), and `runqput`
    // makes one `put` with the handle.
    let mut q = unsafe { Local::new(&pp.runq) };
    sched.runqput(pp, &mut q, task, next);
}

/// The timer sleeper wakes at its deadline (`SOON`), runs the timer it
/// slept for and goes back to sleep until the next one (`LATER`), while a
/// thread outside the runtime arms a timer for `SOON` on the other P. The
/// armer may read the old deadline, `SOON`, and leave the timer to a
/// sleeper that "wakes earlier anyway" (`timer_added`'s first return,
/// which wakes nobody): then the sleeper's next re-read of the heaps must
/// see it. Or it reads `NEVER` between the two sleeps and calls `wakep`
/// (which starts an M here: both Ps are idle and nobody spins), or the new
/// deadline `LATER` and breaks the sleep.
///
/// Planted bugs, each caught (deadlock: the sleeper sleeps until `LATER`
/// with nothing to wake it): (a) no `fence(SeqCst)` in `timer_added`;
/// (b) no re-read of the heaps after the sleeper publishes its deadline;
/// (c) the sleeper's `sleep_until` store `Relaxed` and no fence after it.
/// The old-deadline path is what catches them: on the `NEVER` path the
/// `wakep` fallback covers the timer whatever the fences do.
#[test]
fn loom_timer_sleeper_resleeps_while_a_timer_is_armed() {
    loom::model(|| {
        let sched = model_sched(2);
        sched.init_idle();
        timer_on(&sched.ps[1].timers, SOON); // the one it sleeps for now
        timer_on(&sched.ps[1].timers, LATER);
        let parker = Arc::new(Parker::new());
        let (s, p) = (sched.clone(), parker.clone());
        let sleeper = thread::spawn(move || {
            let first = sleep_as_timer_sleeper(&s, &p);
            // Woken at SOON: run what is due (in the real loop, on an idle
            // P it takes; the armed timer is on the other P's heap).
            let mut fired = Vec::new();
            assert_eq!(s.ps[1].timers.run(SOON, &mut fired), 1);
            let second = sleep_as_timer_sleeper(&s, &p);
            (first, second)
        });
        // A thread without a P: the round-robin puts the timer on P0.
        drop(sched.start_timer(Action::Wake(None), Callback::None, SOON));
        let started = an_m_was_started(&sched);
        if started {
            // The started M covers the timer; end the sleep, if any.
            parker.unpark(Handoff::Exit);
        }
        let (first, second) = sleeper.join().unwrap();
        assert_eq!(first, Slept::Covers(SOON), "the first sleep ends at SOON");
        timer_is_covered(&sched, &[second], started);
        assert_eq!(sched.ps[0].timers.next_when(), SOON, "the timer is armed");
        sched.drain_timers();
    });
}

/// A timer armed while every P is busy wakes nobody (`timer_added`'s
/// second return): the P that goes idle next must make the sleeper's
/// deadline cover it. P0's spinning M finds nothing, gives P0 up and parks
/// (checking the sleeper's deadline against the heaps, or becoming the
/// sleeper); an M without a P parks as the timer sleeper meanwhile; a task
/// on P1 arms a timer on P1's heap. The armer may see every P busy, or P0
/// idle and the sleeper's deadline (and break its sleep), or P0 idle and no
/// sleeper yet (`wakep`: fails while the spinner spins, else starts an M).
/// P1's own loop, which would also run the timer, is not modelled: the
/// protocol promises that the sleeper covers it once a P is idle.
///
/// Planted bugs, each caught (deadlock): (a) no `fence(SeqCst)` in
/// `timer_added` (the armer reads every P busy, the idle M misses the
/// timer); (d) `become_timer_sleeper` not checking the other sleeper's
/// deadline. (b) and (c) of the model above pass here, rightly: what the
/// sleeper's own re-read misses, the spinning M's check of its deadline
/// (after the spinner's fence, which the armer's `wakep` pairs with) sees.
#[test]
fn loom_timer_sleeper_covers_a_timer_armed_while_every_p_is_busy() {
    loom::model(|| {
        let (sched, held) = all_ps_busy(2);
        let [p0, p1]: [HeldP; 2] = held.try_into().expect("two Ps");
        sched.idle.inc_spinning(); // P0's M
        timer_on(&sched.ps[0].timers, LATER);
        let (sp, xp) = (Arc::new(Parker::new()), Arc::new(Parker::new()));
        let (s, p) = (sched.clone(), sp.clone());
        let sleeper = thread::spawn(move || sleep_as_timer_sleeper(&s, &p));
        let (s, p) = (sched.clone(), xp.clone());
        let spinner = thread::spawn(move || {
            assert!(!going_idle(&s, p0, true), "nothing to run");
            sleep_as_timer_sleeper(&s, &p)
        });
        on_p(&sched, p1, || {
            drop(sched.start_timer(Action::Wake(None), Callback::None, SOON));
        });
        let started = an_m_was_started(&sched);
        if started {
            sp.unpark(Handoff::Exit);
            xp.unpark(Handoff::Exit);
        }
        let turns = [sleeper.join().unwrap(), spinner.join().unwrap()];
        timer_is_covered(&sched, &turns, started);
        assert_eq!(sched.ps[1].timers.next_when(), SOON, "the timer is armed");
        sched.drain_timers();
    });
}

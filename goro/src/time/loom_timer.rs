//! loom models of the timer state machine across two Ps' heaps.
//! `RUSTFLAGS="--cfg loom" cargo test -p goro --lib --release loom_timer`
//!
//! CI (`.ci/run`) runs these with `LOOM_MAX_PREEMPTIONS=3` (at most 3
//! preemptions per execution); the command above, without the
//! variable, explores them with no preemption bound.
use crate::chan::chan::Chan;
use crate::loom::thread;
use crate::loom::Ordering;
use crate::sched::timer::clock;
use crate::sched::timer::queue::{push, TimerQueue};
use crate::sched::timer::{Action, Callback, Fired, SetOutcome, TimerInner};
use std::sync::atomic::AtomicUsize as StdCount;
use std::sync::{Arc, Weak};
use std::task::Waker;
use std::time::Instant;

fn queue() -> Arc<TimerQueue> {
    TimerQueue::new(Weak::new())
}

fn counting_timer(home: &Arc<TimerQueue>) -> (Arc<TimerInner>, Arc<StdCount>) {
    let n = Arc::new(StdCount::new(0));
    let c = n.clone();
    let f: Box<dyn Fn() + Send + Sync> = Box::new(move || {
        c.fetch_add(1, Ordering::SeqCst);
    });
    (
        TimerInner::new(
            Action::Func { spawn: false },
            Callback::Boxed(f),
            home.clone(),
        ),
        n,
    )
}

fn arm(q: &Arc<TimerQueue>, t: &Arc<TimerInner>, when: u64) {
    if t.set(when, 0).needs_push {
        push(q, t);
    }
}

fn fire(q: &TimerQueue, now: u64) {
    let mut out = Vec::new();
    q.run(now, &mut out);
    for f in out {
        if let Fired::Func(t, _) = f {
            t.call();
        }
    }
}

fn assert_clean(q: &TimerQueue) {
    assert_eq!(q.len(), 0, "heap empty after everything fired");
    assert_eq!(q.zombies.load(Ordering::SeqCst), 0, "zombie count balanced");
}

/// stop racing the owner's fire: the callback runs iff stop says it
/// did not prevent it, and exactly once.
#[test]
fn loom_timer_stop_races_fire() {
    loom::model(|| {
        let q0 = queue();
        let (t, fired) = counting_timer(&q0);
        arm(&q0, &t, 10);
        let (q, tt) = (q0.clone(), t.clone());
        let owner = thread::spawn(move || fire(&q, 100));
        let stopped = t.set(0, 0).was_pending;
        owner.join().unwrap();
        fire(&q0, 1000);
        assert_eq!(fired.load(Ordering::SeqCst) + usize::from(stopped), 1);
        assert_clean(&q0);
        drop(tt);
    });
}

/// A reset to an earlier time from another P races the owner's fire:
/// after the reset, exactly one more fire happens, never two.
#[test]
fn loom_timer_reset_on_another_p_races_fire() {
    loom::model(|| {
        let (q0, q1) = (queue(), queue());
        let (t, fired) = counting_timer(&q0);
        arm(&q0, &t, 10);
        let (q, tt) = (q0.clone(), t.clone());
        let owner = thread::spawn(move || fire(&q, 100));
        arm(&q1, &t, 5);
        owner.join().unwrap();
        let before = fired.load(Ordering::SeqCst);
        fire(&q0, 1000);
        fire(&q1, 1000);
        let after = fired.load(Ordering::SeqCst) - before;
        assert!(before <= 1, "fired {before} times before the final runs");
        // Whatever the owner did, the re-armed timer fires exactly once more
        // unless the owner's fire already consumed this arming.
        assert!(
            after <= 1 && before + after >= 1,
            "before={before} after={after}"
        );
        assert_clean(&q0);
        assert_clean(&q1);
        drop(tt);
    });
}

/// A reset to a later time (the lazy path) racing the fire of the old
/// entry: at most one fire before the new deadline, exactly one in all.
#[test]
fn loom_timer_lazy_reset_races_fire() {
    loom::model(|| {
        let q0 = queue();
        let (t, fired) = counting_timer(&q0);
        arm(&q0, &t, 10);
        let (q, tt) = (q0.clone(), t.clone());
        let owner = thread::spawn(move || fire(&q, 100));
        arm(&q0, &t, 500);
        owner.join().unwrap();
        fire(&q0, 1000);
        let n = fired.load(Ordering::SeqCst);
        assert!(n == 1 || n == 2, "fired {n} times");
        assert_clean(&q0);
        drop(tt);
    });
}

/// A stop racing a sweep triggered by a push on the same heap: the
/// lock-free liveness check never drops a live entry, and the stopped
/// timer never fires.
#[test]
fn loom_timer_sweep_races_stop() {
    loom::model(|| {
        let q0 = queue();
        let (a, fa) = counting_timer(&q0);
        let (b, fb) = counting_timer(&q0);
        arm(&q0, &a, 10);
        arm(&q0, &b, 20);
        let aa = a.clone();
        let stopper = thread::spawn(move || aa.set(0, 0).was_pending);
        // Pushing c sweeps if a's zombie is already counted.
        let (c, fc) = counting_timer(&q0);
        arm(&q0, &c, 30);
        let stopped = stopper.join().unwrap();
        assert!(stopped, "a was armed");
        fire(&q0, 1000);
        assert_eq!(fa.load(Ordering::SeqCst), 0, "a was stopped");
        assert_eq!(fb.load(Ordering::SeqCst), 1, "b fires once");
        assert_eq!(fc.load(Ordering::SeqCst), 1, "c fires once");
        assert_clean(&q0);
    });
}

// ---- Channel timers: on a heap only while a receiver waits (Go 1.23) --
//
// No goro runtime exists under loom, so `push_timer` would find no heap:
// the models call `push` where a parked receiver's `block_chan` asks for
// an entry, and `run` where a P would. Deadlines are on the real timer
// clock (`maybe_run_chan` reads it): 1 is always due, `1 + LONG` never
// is within a test run.

/// "Now" for the heap runs: a deadline of 1 is due by then.
const LATE: u64 = 1_000;
/// A ticker period long enough that no second tick falls due, either at
/// `LATE` or on the real clock.
const LONG: u64 = 1 << 50;

/// A channel timer attached to its one-slot channel as
/// `chan::timer_receiver` builds it, armed for `when` (every `period`)
/// with nobody waiting: no heap entry.
fn chan_timer(
    q: &Arc<TimerQueue>,
    when: u64,
    period: u64,
) -> (Arc<TimerInner>, crate::loom::Arc<Chan<Instant>>) {
    // Start the clock's epoch, so that every execution reads it the same.
    clock::now();
    let t = TimerInner::for_chan(q.clone());
    let c = crate::loom::Arc::new(Chan::with_timer(1, Some(t.clone())));
    // SAFETY: the channel detaches its timer in its drop (`chan.rs`).
    unsafe { t.attach_chan(&*c) };
    assert_eq!(
        t.set(when, period),
        SetOutcome {
            was_pending: false,
            needs_push: false
        },
        "nobody waits: no heap entry"
    );
    (t, c)
}

/// A receiver's look, as every receive path starts: run the timer if it
/// is due and no heap is in charge of it, then take a value.
fn look(c: &Chan<Instant>) -> bool {
    c.timer_run();
    let mut inner = c.lock();
    c.recv_locked(&mut inner, None).is_ok()
}

/// A receiver parks on the channel: the `timer_block` hook, with the
/// push that `push_timer` would do on the receiver's P.
fn block(q: &Arc<TimerQueue>, t: &Arc<TimerInner>) {
    if t.block_chan() {
        push(q, t);
    }
}

/// A P's timer check at `now`. The models park no waiter in the
/// channel's queue, so a fire buffers its value and wakes no one.
fn run_chan(q: &TimerQueue, now: u64) {
    let mut out = Vec::new();
    q.run(now, &mut out);
    assert!(out.is_empty(), "nobody is queued on the channel to wake");
}

/// A receiver looks at a due one-shot timer (and parks if it finds
/// nothing) while another receiver parks and gives up on another P and
/// the owner of the heap runs it: the one value is delivered exactly
/// once (taken by the look, or sent by a heap run to the parked
/// receiver, which wakes for nothing else), never twice, never lost;
/// and once nobody waits, the timer has no heap entry.
#[test]
fn loom_chan_timer_receiver_races_heap_run_delivers_once() {
    loom::model(|| {
        let q0 = queue();
        let (t, c) = chan_timer(&q0, 1, 0);
        let (q, tt) = (q0.clone(), t.clone());
        let other = thread::spawn(move || {
            block(&q, &tt);
            tt.unblock_chan();
        });
        let q = q0.clone();
        let owner = thread::spawn(move || run_chan(&q, LATE));
        let mut got = usize::from(look(&c));
        let parked = got == 0;
        if parked {
            block(&q0, &t);
        }
        other.join().unwrap();
        owner.join().unwrap();
        if parked {
            // A P runs the heap (the push made sure one would); the
            // parked receiver wakes only if that sent it the value.
            run_chan(&q0, LATE);
            let handed = {
                let mut inner = c.lock();
                c.recv_locked(&mut inner, None).is_ok()
            };
            assert!(
                handed,
                "a receiver parked on a due timer and no heap run sent it the value"
            );
            got += 1;
            t.unblock_chan();
        }
        assert_eq!(got, 1, "the timer's one value was delivered {got} times");
        assert!(!look(&c), "a second value was delivered");
        assert!(
            t.lock().entry.is_none(),
            "nobody waits, yet a heap entry is live"
        );
        run_chan(&q0, LATE);
        assert_clean(&q0);
    });
}

/// `stop` races a receiver that runs the due timer inline. Go 1.23: an
/// undelivered value counts as pending and stop discards it, so for a
/// one-shot timer exactly one of "stop returned true" and "the value was
/// received" holds; for a one-shot timer and a ticker alike, nothing is
/// received once stop has returned.
#[test]
fn loom_chan_timer_stop_races_inline_run() {
    for period in [0, LONG] {
        loom::model(move || {
            let q0 = queue();
            let (t, c) = chan_timer(&q0, 1, period);
            let stopped = crate::loom::Arc::new(crate::loom::AtomicBool::new(false));
            let (cc, s) = (c.clone(), stopped.clone());
            let receiver = thread::spawn(move || {
                // SeqCst: orders this look after a stop seen returned.
                let after_stop = s.load(Ordering::SeqCst);
                let got = look(&cc);
                assert!(!(after_stop && got), "received a value after stop returned");
                got
            });
            let pending = t.set(0, 0).was_pending;
            stopped.store(true, Ordering::SeqCst);
            assert!(!look(&c), "received a value after stop returned");
            let got = receiver.join().unwrap();
            if period == 0 {
                assert!(
                    got != pending,
                    "stop returned pending={pending} and the value was received={got}"
                );
            }
            assert!(!look(&c), "received a value after stop returned");
            assert_clean(&q0);
        });
    }
}

/// The last parked receiver leaves (its entry becomes a zombie) while
/// the heap's owner runs that entry: then the timer has no live entry,
/// the heap drains with its zombie count balanced, and the one value
/// is delivered once (buffered by the run, or run inline by the next
/// look). For a one-shot timer and a ticker.
#[test]
fn loom_chan_timer_unblock_races_heap_run() {
    for period in [0, LONG] {
        loom::model(move || {
            let q0 = queue();
            let (t, c) = chan_timer(&q0, 1, period);
            block(&q0, &t);
            let q = q0.clone();
            let owner = thread::spawn(move || run_chan(&q, LATE));
            t.unblock_chan();
            owner.join().unwrap();
            assert!(
                t.lock().entry.is_none(),
                "nobody waits, yet a heap entry is live"
            );
            // Past a ticker's next tick: a zombie left for it surfaces.
            run_chan(&q0, LONG + LATE);
            assert_clean(&q0);
            assert!(look(&c), "the due value was lost");
            assert!(!look(&c), "a second value was delivered");
        });
    }
}

/// Counts wake-ups (the parked receiver's waker).
struct Wakes(StdCount);

impl std::task::Wake for Wakes {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A receiver parked on the channel through the real receive path
/// (`poll_recv`: look, park, `timer_block`) is cancelled (`unpark_recv`,
/// as dropping its future does) while the heap's owner fires the timer:
/// the value is neither lost nor duplicated. Either the fire reached the
/// channel (handed to the receiver, whose cancellation puts it back, or
/// buffered after the receiver left) and the timer is disarmed, or the
/// timer is still armed with no heap entry, for the next receiver to
/// run; and a wake-up always comes with the value.
#[test]
fn loom_chan_timer_cancelled_receiver_races_heap_fire() {
    loom::model(|| {
        let q0 = queue();
        // Due at the heap runs below, not on the real clock: the
        // receiver's look finds nothing and it parks.
        let (t, c) = chan_timer(&q0, LONG, 0);
        let wakes = Arc::new(Wakes(StdCount::new(0)));
        let waker = Waker::from(wakes.clone());
        let mut cx = std::task::Context::from_waker(&waker);
        let mut parked = None;
        let first = crate::chan::chan::poll_recv(&c, &mut parked, &mut cx);
        assert!(first.is_pending(), "nothing is due on the real clock");
        push(&q0, &t); // what `push_timer` does on the receiver's P
        let q = q0.clone();
        let owner = thread::spawn(move || {
            let mut out = Vec::new();
            q.run(LONG + LATE, &mut out);
            for f in out {
                if let Fired::Wake(w) = f {
                    w.wake();
                }
            }
        });
        c.unpark_recv(parked.take().expect("parked"));
        owner.join().unwrap();
        let buffered = {
            let mut inner = c.lock();
            c.recv_locked(&mut inner, None).is_ok()
        };
        let armed = t.is_armed();
        assert!(
            buffered != armed,
            "value in the channel: {buffered}, timer still armed: {armed}"
        );
        assert!(
            wakes.0.load(Ordering::SeqCst) <= usize::from(buffered),
            "woken without a value"
        );
        assert!(
            t.lock().entry.is_none(),
            "nobody waits, yet a heap entry is live"
        );
        run_chan(&q0, LONG + LATE);
        assert_clean(&q0);
    });
}

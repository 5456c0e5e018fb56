//! loom model of the spare sleep timer (`Sched::start_sleep`,
//! `sched/timer/check.rs`): a finished sleep's timer stays armed, its waker
//! forgotten, and the next sleep re-arms it while a thread may be running
//! the heap that holds its old entry.
//!
//! Run with:
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p goro --lib --release loom_spare`

use crate::loom::thread;
use crate::sched::loom::tests::model_sched_with;
use crate::sched::policy::Policy;
use crate::sched::timer::queue::push;
use crate::sched::timer::{Action, Callback, Fired, TimerInner, NO_ENTRY};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Wake, Waker};

/// A waker that counts its wakes.
struct Count(AtomicUsize);

impl Wake for Count {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn counting() -> (Arc<Count>, Waker) {
    let c = Arc::new(Count(AtomicUsize::new(0)));
    (c.clone(), Waker::from(c))
}

/// The old sleep's entry is due at `OLD`.
const OLD: u64 = 10;

/// A spare: a sleep's timer armed for `OLD` with its entry on P0's heap,
/// then released (waker forgotten). The new sleep re-arms it for `when`
/// while another thread runs that heap at `now`. Afterwards the new sleep
/// is woken only if `when <= now`, and otherwise still has a live entry
/// due no later than `when`; the old sleep is never woken.
fn spare_rearm_races_the_heap(when: u64, now: u64) {
    loom::model(move || {
        let sched = model_sched_with(1, Policy::default());
        let q = sched.ps[0].timers.clone();
        let (old, old_waker) = counting();
        let t = TimerInner::new_at(
            Action::Wake(Some(old_waker)),
            Callback::None,
            q.clone(),
            OLD,
        );
        assert!(push(&q, &t).is_some(), "the spare's entry heads the heap");
        assert!(t.forget_waker(), "released while armed");

        let runner = {
            let q = q.clone();
            thread::spawn(move || {
                let mut out = Vec::new();
                q.run(now, &mut out);
                for f in out {
                    if let Fired::Wake(w) = f {
                        w.wake();
                    }
                }
            })
        };
        let (new, new_waker) = counting();
        if t.rearm_sleep(new_waker, when) {
            push(&q, &t);
        }
        runner.join().unwrap();

        assert_eq!(
            old.0.load(Ordering::SeqCst),
            0,
            "the finished sleep was woken"
        );
        let woken = new.0.load(Ordering::SeqCst);
        if woken > 0 {
            assert!(when <= now, "woken at {now} for a sleep until {when}");
            assert_eq!(woken, 1, "woken twice");
        } else {
            let st = t.lock();
            let entry = st.entry.as_ref().map(|(_, w)| *w);
            assert!(
                matches!(entry, Some(w) if w <= when) && t.live.load(Ordering::SeqCst) != NO_ENTRY,
                "a sleep until {when} has no entry due by then (entry {entry:?}) after a run at {now}"
            );
            assert!(
                q.next_when() <= when,
                "the heap's head is later than {when}"
            );
        }
        sched.drain_timers();
    });
}

#[test]
fn loom_spare_rearmed_later_than_its_entry() {
    // The run finds the old entry due: it either fires the forgotten
    // waker's timer (then the re-arm pushes) or moves the entry.
    spare_rearm_races_the_heap(20, OLD);
}

#[test]
fn loom_spare_rearmed_earlier_than_its_entry() {
    // The old entry is not due at the run; the new deadline needs an entry
    // of its own.
    spare_rearm_races_the_heap(5, 7);
}

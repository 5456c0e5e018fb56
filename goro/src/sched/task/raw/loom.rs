//! loom models of a task's own protocol: the state word, the stage and the
//! joiner's waker of `raw/` (the rules in `raw/mod.rs`'s module docs).
//!
//! Run with:
//! `RUSTFLAGS="--cfg loom --cfg loom_task" LOOM_MAX_PREEMPTIONS=3 CARGO_TARGET_DIR=target/loom-task cargo test -p goro --release --lib loom_task`
//!
//! Both cfgs: `loom_task` switches `raw/`'s `sync` facade to loom's atomics
//! and cells, so every access to the state word, the stage and the waker
//! slot is checked. Under plain `--cfg loom` the task stays a black box to
//! the other models and these models are compiled out; `.ci/run` runs them
//! in a step of their own, in their own target dir.
//!
//! # The harness
//!
//! Each model spawns one task whose schedule function pushes the
//! `Runnable` onto a queue (a loom `Mutex<Vec<_>>`) and fails if the queue
//! already holds one: with one task per model, that is the task in two
//! queues at once. Model threads drain the queue, running what they pop.
//! The schedule function holds a counter of its own drop, which happens
//! when the allocation is freed (`dealloc`), so that counter is the number
//! of frees; it also holds a loom `Arc` of the queue, so a task never freed
//! is loom's leaked-`Arc` report as well. Futures and outputs count their
//! drops the same way. Every count is read after the model's threads are
//! joined.
//!
//! # What each model guards
//!
//! * `loom_task_wake_racing_the_end_of_a_poll{,_by_ref}`: a task waits for
//!   an event (Pending, keeping a clone of its waker) that another thread
//!   fires and then wakes it, by value (by reference), while the task's
//!   first poll may be running: the task completes (no lost wake-up), is
//!   never queued twice, is polled at most twice, and its output reaches
//!   the handle. The event is a Release store and the poll's check an
//!   Acquire load, so the model also holds the task to the waker contract
//!   async-task and tokio keep: a wake happens before the poll it asks
//!   for, even a wake that finds the task already scheduled (which must
//!   then still write the word, as theirs do, for that run to see what the
//!   waker wrote before waking).
//! * `loom_task_join_racing_completion{,_with_a_new_waker}`: the
//!   `TaskHandle` polls (once, or twice with a different waker, which
//!   replaces the stored one) while the task completes: either a poll saw
//!   `Ready`, or the waker of the last poll was woken and the next poll is
//!   `Ready(Some)`; the output is taken once and dropped once.
//! * `loom_task_cancel_racing_a_wake_and_a_run`: `TaskHandle::cancel`
//!   while another thread runs the task's first `Runnable` and then wakes
//!   it: the future is dropped exactly once and promptly (while a waker
//!   still holds the task, as a timer or an IO registration would), no
//!   `Runnable` is left, and the allocation is freed exactly once.
//! * `loom_task_detach_racing_completion{,_after_a_poll}`: the handle is
//!   dropped (after a poll that registers its waker) while the task
//!   completes: the output is dropped exactly once, by whichever side owns
//!   it, and the allocation is freed once.
//! * `loom_task_runnable_dropped_unrun_racing_a_waker_drop`: a `Runnable`
//!   dropped unrun (a queue dropped at shutdown) while a waker and the
//!   handle are dropped: the future is dropped by the `Runnable`'s drop
//!   itself, once, and the allocation is freed once.
//! * `loom_task_runnable_dropped_unrun_then_the_join_sees_none`: the same
//!   drop while a waker wakes the task and the handle polls: the joiner is
//!   woken (or saw `Ready`) and gets `None`.
//! * `loom_task_schedule_function_outlives_its_call`: a detached, parked
//!   task woken by value while its schedule function drops the `Runnable`
//!   (a runtime shutting down), the task's last reference: the allocation,
//!   which holds the schedule function, outlives the call.
//!
//! The first two and the last found real bugs in the first version of
//! `raw/` (a wake of a scheduled task that only loaded the word; a
//! schedule call with no reference of its own); both are fixed, and the
//! results file below has the failing runs.
//!
//! At `LOOM_MAX_PREEMPTIONS=3` the ten models take about 2 s together
//! (after a build of about 40 s, or 4 minutes from scratch) on the 2-core
//! VM; unbounded, all but `cancel_racing_a_wake_and_a_run` finish too
//! (the wake models in 47 and 99 s).
//!
//! # Planted bugs (each reverted)
//!
//! Planted on the fixed protocol, so that every model passes without a
//! plant; the diffs and the models' messages:
//! `bench/results/2026-11-28-loom-task-plants.txt`.
//!
//! | plant | caught by |
//! |---|---|
//! | `Header::wake` of a running task does not set SCHEDULED (lost wake-up) | both `wake_racing_the_end_of_a_poll` models ("a wake-up was lost") |
//! | `Runnable::run`'s Ready path drops the output even with JOIN set | both `join_racing_completion` and both `wake_racing` models ("the output was lost"), both `detach_racing_completion` models (loom: concurrent writes to the stage's cell) |
//! | `TaskHandle::cancel` does not schedule an idle task | `cancel_racing_a_wake_and_a_run` ("the future outlived its cancel") |
//! | `Runnable::drop` only drops its reference (no CLOSED, no `cancel_held`) | both `runnable_dropped_unrun` models ("a Runnable's drop left its future alive") |

// Models only: nothing here is built into the library.
#![cfg(test)]

use super::{Runnable, TaskHandle};
use crate::loom::thread;
use crate::loom::{Arc, AtomicBool, AtomicUsize, Mutex, Ordering};
use crate::sched::task::meta::{Parent, TaskMeta};
use std::future::Future;
use std::panic::Location;
use std::pin::Pin;
use std::task::{Context, Poll, Wake, Waker};

/// Adds one to its counter when dropped.
struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        // Relaxed: read only after the model's threads are joined (or by
        // the thread that dropped it).
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

fn counter() -> Arc<AtomicUsize> {
    Arc::new(AtomicUsize::new(0))
}

fn count(c: &AtomicUsize) -> usize {
    // Relaxed: see `Counted`.
    c.load(Ordering::Relaxed)
}

/// A model's run queue and its count of frees.
#[derive(Clone)]
struct Harness {
    queue: Arc<Mutex<Vec<Runnable>>>,
    freed: Arc<AtomicUsize>,
}

impl Harness {
    fn new() -> Harness {
        Harness {
            queue: Arc::new(Mutex::new(Vec::new())),
            freed: counter(),
        }
    }

    /// Spawns `future` as a task whose schedule function pushes onto the
    /// queue and whose free is counted.
    fn spawn<F>(&self, future: F) -> (Runnable, TaskHandle<F::Output>)
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let queue = self.queue.clone();
        let freed = Counted(self.freed.clone());
        let meta = TaskMeta::new(Location::caller(), None, None, Parent::SPAWNER, 1);
        super::spawn(
            meta,
            |_meta| future,
            move |r: Runnable, _woken_while_running: bool| {
                // Dropped with the schedule function: when the task is freed.
                let _freed = &freed;
                let mut q = queue.lock().unwrap();
                assert!(q.is_empty(), "the task is in two queues at once");
                q.push(r);
            },
        )
    }

    /// Runs what the queue holds until it is empty.
    fn drain(&self) {
        loop {
            let next = self.queue.lock().unwrap().pop();
            match next {
                Some(r) => {
                    r.run();
                }
                None => return,
            }
        }
    }

    /// Checks, once every thread is joined, that no `Runnable` is left.
    fn assert_no_runnable_left(&self) {
        assert!(
            self.queue.lock().unwrap().is_empty(),
            "a Runnable was left queued"
        );
    }

    fn freed(&self) -> usize {
        count(&self.freed)
    }
}

/// A joiner's waker that records being woken.
struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: std::sync::Arc<Self>) {
        self.wake_by_ref()
    }
    fn wake_by_ref(self: &std::sync::Arc<Self>) {
        // Relaxed: read after the waking thread is joined.
        self.0.store(true, Ordering::Relaxed)
    }
}

/// A flag and a waker that sets it.
fn flag() -> (std::sync::Arc<Flag>, Waker) {
    let f = std::sync::Arc::new(Flag(AtomicBool::new(false)));
    (f.clone(), Waker::from(f))
}

fn woken(f: &Flag) -> bool {
    // Relaxed: see `Flag::wake_by_ref`.
    f.0.load(Ordering::Relaxed)
}

/// Polls the handle with `waker`.
fn poll<T>(handle: &mut TaskHandle<T>, waker: &Waker) -> Poll<Option<T>> {
    handle.poll_output(&mut Context::from_waker(waker))
}

/// Ready once `fired` is set; until then Pending, keeping a clone of its
/// waker (as a parked task's primitive keeps it). Counts its polls.
struct Event {
    fired: Arc<AtomicBool>,
    polls: Arc<AtomicUsize>,
    kept: Option<Waker>,
}

impl Future for Event {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        // Relaxed: a read-modify-write sees every earlier poll's.
        this.polls.fetch_add(1, Ordering::Relaxed);
        // Acquire: pairs with the Release store in `fire` only through the
        // task's own state word (a wake happens before the poll it
        // asks for), which is what the model checks.
        if this.fired.load(Ordering::Acquire) {
            Poll::Ready(())
        } else {
            this.kept = Some(cx.waker().clone());
            Poll::Pending
        }
    }
}

/// What a primitive does to complete an [`Event`]: sets the flag, then
/// wakes.
fn fire(fired: &AtomicBool) {
    // Release: see `Event::poll`.
    fired.store(true, Ordering::Release);
}

/// Never finishes: keeps a clone of its latest waker, and counts its drop.
struct Parked {
    kept: Option<Waker>,
    _dropped: Counted,
}

impl Future for Parked {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.get_mut().kept = Some(cx.waker().clone());
        Poll::Pending
    }
}

/// A task waits for an event that another thread fires and then wakes it
/// by value or by reference, while the task's first poll may be running:
/// the task completes (no lost wake-up), is queued at most once at a time,
/// is polled at most twice, and its output reaches the handle.
fn wake_racing_the_end_of_a_poll(by_ref: bool) {
    loom::model(move || {
        let h = Harness::new();
        let (fired, polls) = (Arc::new(AtomicBool::new(false)), counter());
        let (runnable, mut handle) = h.spawn(Event {
            fired: fired.clone(),
            polls: polls.clone(),
            kept: None,
        });
        // The waker the primitive holds (from an earlier poll, say).
        let waker = runnable.waker();

        let h1 = h.clone();
        let runner = thread::spawn(move || {
            runnable.run();
            h1.drain();
        });
        let h2 = h.clone();
        let waking = thread::spawn(move || {
            fire(&fired);
            if by_ref {
                waker.wake_by_ref();
                drop(waker);
            } else {
                waker.wake();
            }
            h2.drain();
        });
        runner.join().unwrap();
        waking.join().unwrap();

        h.assert_no_runnable_left();
        let polls = count(&polls);
        let (_f, w) = flag();
        match poll(&mut handle, &w) {
            Poll::Ready(Some(())) => {}
            Poll::Ready(None) => panic!("the output was lost: the join got None"),
            Poll::Pending => panic!(
                "a wake-up was lost: the task was polled {polls} times and never saw the event"
            ),
        }
        assert!(polls <= 2, "polled {polls} times for one wake");
        drop(handle);
        assert_eq!(h.freed(), 1, "the task was not freed exactly once");
    });
}

#[test]
fn loom_task_wake_racing_the_end_of_a_poll() {
    wake_racing_the_end_of_a_poll(false);
}

#[test]
fn loom_task_wake_racing_the_end_of_a_poll_by_ref() {
    wake_racing_the_end_of_a_poll(true);
}

/// The handle polls (with a second waker if `new_waker` and the first poll
/// was Pending) while another thread runs the task to completion.
fn join_racing_completion(new_waker: bool) {
    loom::model(move || {
        let h = Harness::new();
        let drops = counter();
        let (runnable, mut handle) = h.spawn(std::future::ready(Counted(drops.clone())));
        let runner = thread::spawn(move || {
            runnable.run();
        });

        let (mut f, w) = flag();
        let mut got = poll(&mut handle, &w);
        if new_waker && got.is_pending() {
            let (f2, w2) = flag();
            got = poll(&mut handle, &w2);
            f = f2;
        }
        runner.join().unwrap();

        let out = match got {
            Poll::Ready(out) => out,
            Poll::Pending => {
                assert!(woken(&f), "the task completed without waking its joiner");
                let (_f, w) = flag();
                match poll(&mut handle, &w) {
                    Poll::Ready(out) => out,
                    Poll::Pending => panic!("the joiner was woken but the task is not complete"),
                }
            }
        };
        assert!(out.is_some(), "the output was lost: the join got None");
        assert_eq!(
            count(&drops),
            0,
            "the output was dropped before the join took it"
        );
        drop(out);
        drop(handle);
        h.assert_no_runnable_left();
        assert_eq!(count(&drops), 1, "the output was not dropped exactly once");
        assert_eq!(h.freed(), 1, "the task was not freed exactly once");
    });
}

#[test]
fn loom_task_join_racing_completion() {
    join_racing_completion(false);
}

#[test]
fn loom_task_join_racing_completion_with_a_new_waker() {
    join_racing_completion(true);
}

/// `TaskHandle::cancel` while another thread runs the task's first
/// `Runnable` and then wakes it; a third waker (a timer's, say) keeps the
/// task alive, so the future must be dropped by the cancel, not by the
/// free.
#[test]
fn loom_task_cancel_racing_a_wake_and_a_run() {
    loom::model(|| {
        let h = Harness::new();
        let dropped = counter();
        let (runnable, handle) = h.spawn(Parked {
            kept: None,
            _dropped: Counted(dropped.clone()),
        });
        let waker = runnable.waker();
        let registered = runnable.waker();

        let h1 = h.clone();
        let cancelling = thread::spawn(move || {
            handle.cancel();
            h1.drain();
        });
        let h2 = h.clone();
        let running = thread::spawn(move || {
            runnable.run();
            waker.wake();
            h2.drain();
        });
        cancelling.join().unwrap();
        running.join().unwrap();

        h.assert_no_runnable_left();
        assert_eq!(
            count(&dropped),
            1,
            "the future outlived its cancel (or was dropped twice)"
        );
        assert_eq!(h.freed(), 0, "the task was freed while a waker held it");
        drop(registered);
        assert_eq!(count(&dropped), 1, "the future was dropped twice");
        assert_eq!(h.freed(), 1, "the task was not freed exactly once");
    });
}

/// The handle is dropped (after one poll if `poll_first`) while another
/// thread runs the task to completion.
fn detach_racing_completion(poll_first: bool) {
    loom::model(move || {
        let h = Harness::new();
        let drops = counter();
        let (runnable, mut handle) = h.spawn(std::future::ready(Counted(drops.clone())));
        let runner = thread::spawn(move || {
            runnable.run();
        });

        if poll_first {
            let (_f, w) = flag();
            if let Poll::Ready(out) = poll(&mut handle, &w) {
                assert!(out.is_some(), "the output was lost: the join got None");
            }
        }
        drop(handle);
        runner.join().unwrap();

        h.assert_no_runnable_left();
        assert_eq!(count(&drops), 1, "the output was not dropped exactly once");
        assert_eq!(h.freed(), 1, "the task was not freed exactly once");
    });
}

#[test]
fn loom_task_detach_racing_completion() {
    detach_racing_completion(false);
}

#[test]
fn loom_task_detach_racing_completion_after_a_poll() {
    detach_racing_completion(true);
}

/// A `Runnable` dropped unrun (shutdown) while a waker and the handle are
/// dropped on other threads.
#[test]
fn loom_task_runnable_dropped_unrun_racing_a_waker_drop() {
    loom::model(|| {
        let h = Harness::new();
        let dropped = counter();
        let (runnable, handle) = h.spawn(Parked {
            kept: None,
            _dropped: Counted(dropped.clone()),
        });
        let waker = runnable.waker();

        let d = dropped.clone();
        let shutdown = thread::spawn(move || {
            drop(runnable);
            assert_eq!(count(&d), 1, "a Runnable's drop left its future alive");
        });
        let waker_drop = thread::spawn(move || drop(waker));
        drop(handle);
        shutdown.join().unwrap();
        waker_drop.join().unwrap();

        h.assert_no_runnable_left();
        assert_eq!(
            count(&dropped),
            1,
            "the future was not dropped exactly once"
        );
        assert_eq!(h.freed(), 1, "the task was not freed exactly once");
    });
}

/// A `Runnable` dropped unrun while a waker wakes the task and the handle
/// polls: the join ends, with `None`.
#[test]
fn loom_task_runnable_dropped_unrun_then_the_join_sees_none() {
    loom::model(|| {
        let h = Harness::new();
        let dropped = counter();
        let (runnable, mut handle) = h.spawn(Parked {
            kept: None,
            _dropped: Counted(dropped.clone()),
        });
        let waker = runnable.waker();

        let d = dropped.clone();
        let shutdown = thread::spawn(move || {
            drop(runnable);
            assert_eq!(count(&d), 1, "a Runnable's drop left its future alive");
        });
        let h2 = h.clone();
        let waking = thread::spawn(move || {
            waker.wake();
            h2.drain();
        });
        let (f, w) = flag();
        let got = poll(&mut handle, &w);
        shutdown.join().unwrap();
        waking.join().unwrap();

        let out = match got {
            Poll::Ready(out) => out,
            Poll::Pending => {
                assert!(woken(&f), "the cancel did not wake the joiner");
                let (_f, w) = flag();
                match poll(&mut handle, &w) {
                    Poll::Ready(out) => out,
                    Poll::Pending => panic!("the joiner was woken but the task is not complete"),
                }
            }
        };
        assert!(out.is_none(), "a cancelled task gave its join an output");
        drop(handle);
        h.assert_no_runnable_left();
        assert_eq!(
            count(&dropped),
            1,
            "the future was not dropped exactly once"
        );
        assert_eq!(h.freed(), 1, "the task was not freed exactly once");
    });
}

/// Counts the task's free if it happens while a schedule call is in flight.
struct FreedInCall {
    in_call: Arc<AtomicUsize>,
    freed_in_call: Arc<AtomicUsize>,
}

impl Drop for FreedInCall {
    fn drop(&mut self) {
        if count(&self.in_call) > 0 {
            self.freed_in_call.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// A detached, parked task woken by value while the runtime shuts down:
/// the schedule function drops the `Runnable` (as `Sched::schedule` does
/// once `is_shutdown`), which is the task's last reference.
#[test]
fn loom_task_schedule_function_outlives_its_call() {
    loom::model(|| {
        let (in_call, freed_in_call) = (counter(), counter());
        let guard = FreedInCall {
            in_call: in_call.clone(),
            freed_in_call: freed_in_call.clone(),
        };
        let meta = TaskMeta::new(Location::caller(), None, None, Parent::SPAWNER, 1);
        let (runnable, handle) = super::spawn(
            meta,
            |_| std::future::pending::<()>(),
            move |r: Runnable, _| {
                let _g = &guard;
                // A local clone: the closure's own captures may be gone
                // once `r` is dropped.
                let in_call = in_call.clone();
                in_call.fetch_add(1, Ordering::Relaxed);
                drop(r); // shutdown: cancel the task
                in_call.fetch_sub(1, Ordering::Relaxed);
            },
        );
        drop(handle);
        let waker = runnable.waker();
        runnable.run();
        waker.wake();
        assert_eq!(
            count(&freed_in_call),
            0,
            "the task (and its schedule function) was freed during a call of its schedule function"
        );
    });
}

//! Loom models of `goro::sync::Mutex`.
//!
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p goro --test loom_mutex --release`.
//!
//! The guard reaches the protected value through loom's `UnsafeCell`, so
//! loom itself fails a model in which two guards could touch the value at
//! once, or in which an access is not ordered after the previous owner's.
//! Under loom every wake-up counts as a wait past the starvation threshold
//! (time is not part of a model), so a woken waiter that loses a race puts
//! the mutex into starvation mode and the handoff paths are explored too.
#![cfg(loom)]

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Wake, Waker};

use goro::sync::Mutex;
use loom::sync::Arc;
use loom::thread;

/// Explores with at most 5 preemptions per execution (about 5 s for the
/// whole file in release; unbounded takes minutes), as `.ci/run` runs it
/// (without `LOOM_MAX_PREEMPTIONS`, which overrides the bound).
fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound.get_or_insert(5);
    builder.check(f);
}

/// A waker that unparks a loom thread.
struct Unparker(thread::Thread);

impl Wake for Unparker {
    fn wake(self: std::sync::Arc<Self>) {
        self.0.unpark();
    }
}

fn current_thread_waker() -> Waker {
    Waker::from(std::sync::Arc::new(Unparker(thread::current())))
}

/// A task that polls its lock future `polls` times at most (parking between
/// polls until woken), then is cancelled. Depending on the interleaving it is
/// dropped while queued, after being woken, after being requeued in
/// starvation mode, or after being handed the mutex. Adds 1 if it got the
/// lock.
fn lock_then_cancel(m: &Mutex<usize>, polls: usize) {
    let waker = current_thread_waker();
    let mut cx = Context::from_waker(&waker);
    let mut fut = m.lock();
    for poll in 1..=polls {
        match Pin::new(&mut fut).poll(&mut cx) {
            Poll::Ready(mut g) => {
                *g += 1;
                return;
            }
            Poll::Pending if poll < polls => thread::park(),
            Poll::Pending => {}
        }
    }
    drop(fut);
}

#[test]
fn two_threads_lock_and_unlock_exclusively() {
    model(|| {
        let m = Arc::new(Mutex::new(0usize));
        let t = {
            let m = m.clone();
            thread::spawn(move || *m.lock_blocking() += 1)
        };
        *m.lock_blocking() += 1;
        t.join().unwrap();
        assert_eq!(*m.try_lock().expect("free once both guards are gone"), 2);
    });
}

#[test]
fn cancelled_waiter_neither_blocks_nor_leaks_the_mutex() {
    model(|| {
        let m = Arc::new(Mutex::new(0usize));
        let held = m.lock_blocking();
        let t = {
            let m = m.clone();
            thread::spawn(move || lock_then_cancel(&m, 2))
        };
        drop(held);
        // Barge in (or queue, or receive the mutex from the cancelled waiter).
        *m.lock_blocking() += 10;
        t.join().unwrap();
        let v = *m
            .try_lock()
            .expect("the mutex must be free: no waiter may keep or be owed it");
        assert!(v == 10 || v == 11, "unexpected value {v}");
    });
}

#[test]
fn cancelled_waiter_passes_its_wake_up_or_handoff_to_the_next_waiter() {
    // Cancelled after one poll (dropped queued or woken) and after two
    // (dropped requeued in starvation mode, or handed the mutex).
    for polls in [1, 2] {
        model(move || {
            let m = Arc::new(Mutex::new(0usize));
            let held = m.lock_blocking();
            let cancelled = {
                let m = m.clone();
                thread::spawn(move || lock_then_cancel(&m, polls))
            };
            let waiter = {
                let m = m.clone();
                thread::spawn(move || *m.lock_blocking() += 10)
            };
            drop(held);
            // The cancelled task is queued, then dropped before or after this
            // unlock wakes it (or hands it the mutex, once `waiter` has barged and
            // a woken waiter lost). If it swallowed a wake-up or a handoff, `waiter`
            // never finishes and loom reports the deadlock.
            waiter.join().unwrap();
            cancelled.join().unwrap();
            let v = *m
                .try_lock()
                .expect("the mutex must be free once every task is gone");
            assert!(v == 10 || v == 11, "unexpected value {v}");
        });
    }
}

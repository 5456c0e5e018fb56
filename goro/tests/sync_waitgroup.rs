//! Behaviour of `goro::sync::WaitGroup`.
#![cfg(not(loom))]

mod support;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;

use goro::sync::WaitGroup;
use support::sync::{spawn, Probe};

#[test]
fn wait_returns_at_once_when_the_counter_is_zero() {
    let wg = WaitGroup::new();
    Probe::new(wg.wait()).ready("counter is zero");
    wg.wait_blocking();
}

#[test]
fn wait_returns_after_every_done() {
    let wg = WaitGroup::new();
    wg.add(2);
    let mut w = Probe::new(wg.wait());
    w.pending("two outstanding");
    wg.done();
    assert_eq!(w.wakes(), 0, "one is still outstanding");
    wg.done();
    assert_eq!(w.wakes(), 1);
    w.ready("all done");
}

#[test]
#[should_panic(expected = "sync: negative WaitGroup counter")]
fn negative_waitgroup_counter_panics() {
    WaitGroup::new().done();
}

#[test]
fn failed_negative_add_leaves_the_counter_unchanged() {
    let wg = WaitGroup::new();
    wg.add(1);
    let r = catch_unwind(AssertUnwindSafe(|| wg.add(-2)));
    assert!(r.is_err(), "add(-2) on a counter of 1 must panic");
    let mut w = Probe::new(wg.wait());
    w.pending("the counter must still be 1");
    wg.done();
    w.ready("back to zero");
}

#[test]
fn every_waiter_is_released_when_the_counter_reaches_zero() {
    let wg = WaitGroup::new();
    wg.add(1);
    let mut ws: Vec<_> = (0..3).map(|_| Probe::new(wg.wait())).collect();
    ws.iter_mut().for_each(|w| w.pending("outstanding"));
    wg.done();
    for w in &mut ws {
        assert_eq!(w.wakes(), 1);
        w.ready("released");
    }
}

#[test]
fn released_waiter_completes_even_if_the_counter_rises_again() {
    let wg = WaitGroup::new();
    wg.add(1);
    let mut w = Probe::new(wg.wait());
    w.pending("outstanding");
    wg.done();
    wg.add(1); // next round starts before the waiter runs
    w.ready("Wait returns once the counter was zero, as in Go");
    let mut next = Probe::new(wg.wait());
    next.pending("a new wait belongs to the new round");
    wg.done();
    next.ready("second round done");
}

#[test]
fn dropped_wait_future_leaves_no_waiter() {
    let wg = WaitGroup::new();
    wg.add(1);
    let mut w = Probe::new(wg.wait());
    w.pending("outstanding");
    drop(w);
    wg.done(); // must not touch the departed waiter
    Probe::new(wg.wait()).ready("zero");
}

#[test]
fn clones_share_one_counter() {
    let wg = WaitGroup::new();
    let other = wg.clone();
    other.add(1);
    let mut w = Probe::new(wg.wait());
    w.pending("added through the clone");
    other.done();
    w.ready("done through the clone");
}

#[test]
fn threads_and_tasks_wait_for_threads() {
    const WORKERS: usize = 8;
    let wg = WaitGroup::new();
    let finished = Arc::new(AtomicUsize::new(0));
    wg.add(WORKERS as isize);
    let waiters: Vec<_> = (0..4)
        .map(|i| {
            let (wg, finished) = (wg.clone(), finished.clone());
            spawn(format!("waiter {i}"), move || {
                if i % 2 == 0 {
                    wg.wait_blocking();
                } else {
                    futures::executor::block_on(wg.wait());
                }
                finished.load(SeqCst)
            })
        })
        .collect();
    let workers: Vec<_> = (0..WORKERS)
        .map(|i| {
            let (wg, finished) = (wg.clone(), finished.clone());
            spawn(format!("worker {i}"), move || {
                finished.fetch_add(1, SeqCst);
                wg.done();
            })
        })
        .collect();
    workers.into_iter().for_each(|w| w.join());
    for w in waiters {
        let seen = w.join();
        assert_eq!(
            seen, WORKERS,
            "a waiter returned before every worker was done"
        );
    }
    wg.wait_blocking();
    assert_eq!(finished.load(SeqCst), WORKERS);
}

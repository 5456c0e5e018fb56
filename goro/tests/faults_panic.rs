//! Faults in code the runtime runs for the user: a panic in a task, in an
//! `after_func` callback, in `Pool::new`'s closure and in a `block_in_place`
//! closure. After each, the panic reaches whoever awaits it (or the panic
//! hook), and the runtime is whole (`support::faults::assert_usable`).
//!
//! Covered elsewhere (not repeated here): a task panic's `JoinError`
//! payload and message (`sched_basic::panic_in_task_surfaces_as_join_error_and_runtime_keeps_running`),
//! `block_in_place` panicking at procs 1 (`sched_blocking::block_in_place_that_panics_gives_the_p_back`),
//! a panic in `Pool::new` off a P and at procs 2 (`pool_cycle::panics_in_new_propagate_and_leave_the_pool_usable`),
//! a panicking `OnceCell` initializer (`sync_once_cell::panicking_initializer_lets_a_waiter_take_over`).
#![cfg(not(loom))]

mod support;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::faults::{
    all_dropped_once, assert_usable, at_procs, record_panics, reported, rt, Guard, LIMIT, WAIT,
};
use support::pool::Ledger;
use support::{wait_until, within};

// --------------------------------------------------------------------------
// Panics in tasks
// --------------------------------------------------------------------------

/// A panicking task: its `JoinHandle` returns `Err(JoinError::Panic)`, the
/// panic is also reported by the panic hook on the worker thread (stderr,
/// as for any thread), what the future owned is dropped once, and every P
/// is usable afterwards — at procs 1 and at procs 4, with detached
/// panicking tasks too (their panic is reported and otherwise dropped).
#[test]
fn a_panicking_task_reports_a_join_error_and_leaves_every_p_usable() {
    record_panics();
    at_procs(&[1, 4], "panicking tasks", |procs, rt| {
        let dropped = Arc::new(AtomicUsize::new(0));
        let d = dropped.clone();
        let marker: &'static str = if procs == 1 {
            "faults-task-panic-p1"
        } else {
            "faults-task-panic-p4"
        };
        rt.block_on(async move {
            let hs: Vec<_> = (0..50)
                .map(|i| {
                    let g = Guard(d.clone());
                    goro::spawn(async move {
                        let _g = g;
                        goro::yield_now().await;
                        if i % 2 == 0 {
                            panic!("{marker} {i}");
                        }
                        i
                    })
                })
                .collect();
            for (i, h) in hs.into_iter().enumerate() {
                match h.await {
                    Ok(v) => assert_eq!(v, i, "odd tasks return"),
                    Err(e) => {
                        assert!(i % 2 == 0 && e.is_panic(), "task {i}: {e}");
                        assert_eq!(e.to_string(), format!("task panicked: {marker} {i}"));
                    }
                }
            }
            // Detached: nobody awaits them.
            for i in 0..20 {
                let g = Guard(d.clone());
                drop(goro::spawn(async move {
                    let _g = g;
                    panic!("{marker} detached {i}");
                }));
            }
        });
        wait_until(WAIT, "every task's future was dropped", || {
            dropped.load(SeqCst) == 70
        });
        let threads = reported(marker);
        assert_eq!(threads.len(), 45, "each panic reported once by the hook");
        assert!(
            threads.iter().all(|t| t.starts_with("faults-m")),
            "reported on worker threads: {threads:?}"
        );
        assert_usable(&rt, "panicking tasks");
        assert_eq!(dropped.load(SeqCst), 70, "nothing dropped twice");
    });
}

// --------------------------------------------------------------------------
// Panics in after_func callbacks
// --------------------------------------------------------------------------

/// An `after_func` callback runs as its own task: its panic is reported by
/// the panic hook on a worker thread and otherwise swallowed (nobody holds
/// its `JoinHandle`; Go would crash the program, tokio's spawned task would
/// swallow it likewise). The timer counts as fired (`stop` is false), the
/// callback is dropped once with its `Timer`, other callbacks still run,
/// and every P is usable.
#[test]
fn a_panicking_after_func_callback_is_reported_and_the_runtime_goes_on() {
    record_panics();
    at_procs(&[1, 3], "after_func panics", |procs, rt| {
        let marker: &'static str = if procs == 1 {
            "faults-after-func-p1"
        } else {
            "faults-after-func-p3"
        };
        let calls = Arc::new(AtomicUsize::new(0));
        let dropped = Arc::new(AtomicUsize::new(0));
        let ok = Arc::new(AtomicUsize::new(0));
        let (c, d, k) = (calls.clone(), dropped.clone(), ok.clone());
        rt.block_on(async move {
            let timers: Vec<_> = (0..10)
                .map(|i| {
                    let (c, g) = (c.clone(), Guard(d.clone()));
                    goro::time::after_func(Duration::from_millis(1), move || {
                        let _keep = &g;
                        c.fetch_add(1, SeqCst);
                        panic!("{marker} {i}");
                    })
                })
                .collect();
            let fine = {
                let k = k.clone();
                goro::time::after_func(Duration::from_millis(2), move || {
                    k.fetch_add(1, SeqCst);
                })
            };
            // Wait (without blocking a P) for every callback to have run.
            let deadline = Instant::now() + WAIT;
            while c.load(SeqCst) < 10 || k.load(SeqCst) < 1 {
                assert!(
                    Instant::now() < deadline,
                    "callbacks ran: {} panicking, {} fine",
                    c.load(SeqCst),
                    k.load(SeqCst)
                );
                goro::time::sleep(Duration::from_millis(1)).await;
            }
            for t in &timers {
                assert!(!t.stop(), "a fired timer does not stop");
            }
            assert!(!fine.stop());
            drop(timers);
        });
        wait_until(WAIT, "the panics were reported", || {
            reported(marker).len() == 10
        });
        let threads = reported(marker);
        assert!(
            threads.iter().all(|t| t.starts_with("faults-m")),
            "reported on worker threads: {threads:?}"
        );
        wait_until(WAIT, "each callback dropped with its timer", || {
            dropped.load(SeqCst) == 10
        });
        assert_eq!(calls.load(SeqCst), 10, "each callback ran once");
        assert_eq!(ok.load(SeqCst), 1);
        assert_usable(&rt, "panicking after_func callbacks");
        // A fresh callback still fires.
        let again = Arc::new(AtomicBool::new(false));
        let a = again.clone();
        rt.block_on(async move {
            let _t =
                goro::time::after_func(Duration::from_millis(1), move || a.store(true, SeqCst));
            goro::time::sleep(Duration::from_millis(5)).await;
        });
        wait_until(WAIT, "a later callback fires", || again.load(SeqCst));
        assert_eq!(dropped.load(SeqCst), 10, "nothing dropped twice");
    });
}

// --------------------------------------------------------------------------
// Panics in Pool::new
// --------------------------------------------------------------------------

/// `Pool::new`'s closure panicking on every P (procs 1 and 3): each `get`
/// caller's task gets `JoinError::Panic`, the pool keeps handing out and
/// caching values, every value made is dropped once when the pool goes,
/// and every P is usable.
#[test]
fn pool_new_panicking_on_every_p_leaves_pool_and_runtime_usable() {
    at_procs(&[1, 3], "Pool::new panics", |_, rt| {
        let ledger = Ledger::new();
        let fail = Arc::new(AtomicBool::new(true));
        let (l, f) = (ledger.clone(), fail.clone());
        let pool = Arc::new(goro::sync::Pool::new(move || {
            if f.load(SeqCst) {
                panic!("faults: Pool::new failed on purpose");
            }
            l.make()
        }));
        let p = pool.clone();
        rt.block_on(async move {
            let hs: Vec<_> = (0..30)
                .map(|_| {
                    let p = p.clone();
                    goro::spawn(async move {
                        goro::yield_now().await;
                        p.get()
                    })
                })
                .collect();
            for h in hs {
                match h.await {
                    Err(e) => assert!(e.is_panic(), "get saw new's panic: {e}"),
                    Ok(_) => panic!("get returned a value although new panicked"),
                }
            }
        });
        assert_eq!(ledger.made(), 0);
        fail.store(false, SeqCst);
        let p = pool.clone();
        rt.block_on(async move {
            let hs: Vec<_> = (0..30)
                .map(|_| {
                    let p = p.clone();
                    goro::spawn(async move {
                        let v = p.get().take();
                        goro::yield_now().await;
                        p.put(v.release());
                    })
                })
                .collect();
            for h in hs {
                h.await.expect("get and put after new's panics");
            }
        });
        assert!(ledger.made() >= 1, "new ran again");
        assert_usable(&rt, "panics in Pool::new");
        let made = ledger.made();
        drop(pool);
        assert!(
            goro::sync::pool::wait_reclaimed(WAIT),
            "the dropped pool's values were reclaimed"
        );
        all_dropped_once(&ledger, made, "values of a pool whose new panicked");
    });
}
// --------------------------------------------------------------------------
// block_in_place that panics
// --------------------------------------------------------------------------

/// At procs > 1 (procs 1: `sched_blocking::block_in_place_that_panics_gives_the_p_back`):
/// the panic reaches the task's `JoinHandle`, and the P handed off before
/// the closure ran is not lost: every P runs a task at once afterwards.
#[test]
fn a_panicking_block_in_place_returns_the_p_at_procs_3() {
    within(LIMIT, "block_in_place panics at procs=3", || {
        let rt = rt(3);
        rt.block_on(async {
            let hs: Vec<_> = (0..12)
                .map(|i| {
                    goro::spawn(async move {
                        goro::yield_now().await;
                        goro::block_in_place(|| {
                            if i % 2 == 0 {
                                panic!("faults: block_in_place on purpose");
                            }
                        });
                        // Odd ones go on after the closure, P or no P.
                        goro::yield_now().await;
                    })
                })
                .collect();
            for (i, h) in hs.into_iter().enumerate() {
                assert_eq!(h.await.is_err(), i % 2 == 0, "task {i}");
            }
        });
        assert_usable(&rt, "panicking block_in_place");
        wait_until(WAIT, "every P returns to the idle list", || {
            rt.schedtrace().contains("idleprocs=3")
        });
    });
}

//! Faults: panics in tasks, in `after_func` callbacks, in `Pool::new`, in a
//! `Drop` of a value held by a channel, a pool or a task; `block_in_place`
//! that panics; and shutdown with tasks parked on every kind of wait.
//!
//! After each fault the runtime must still be whole: every P runs a task at
//! once (none was lost with a dead worker thread), timers fire, channels
//! work, and every value made was dropped exactly once.
//!
//! Covered elsewhere (not repeated here): a task panic's `JoinError`
//! payload and message (`sched_basic::panic_in_task_surfaces_as_join_error_and_runtime_keeps_running`),
//! `block_in_place` panicking at procs 1 (`sched_blocking::block_in_place_that_panics_gives_the_p_back`),
//! a panicking `Drop` of a value retired by a pool cycle
//! (`pool_cycle::a_panic_in_a_retired_values_drop_spares_the_others_in_the_lists` / `_in_the_rings`),
//! a panic in `Pool::new` off a P and at procs 2 (`pool_cycle::panics_in_new_propagate_and_leave_the_pool_usable`),
//! a panicking `OnceCell` initializer (`sync_once_cell::panicking_initializer_lets_a_waiter_take_over`),
//! a thousand parked and always-runnable tasks dropped at shutdown with the
//! threads gone (`sched_shutdown::dropping_a_runtime_stops_threads_and_drops_every_unfinished_future`).
#![cfg(not(loom))]

mod common;
#[path = "pool_support/mod.rs"]
mod support;

use common::{wait_until, within};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex, Once};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use support::{Ledger, Tracked};

const LIMIT: Duration = Duration::from_secs(60);
const WAIT: Duration = Duration::from_secs(30);

fn rt(procs: usize) -> goro::Runtime {
    goro::Runtime::builder()
        .procs(procs)
        .thread_name("faults")
        // Only explicit cycles in this binary (pools are process-wide).
        .pool_cycle(Duration::from_secs(3600))
        .build()
        .expect("runtime starts")
}

/// Runs `scenario` once per entry of `procs`, each on a fresh runtime with
/// that many Ps, within [`LIMIT`]; `what` names the scenario in a timeout.
fn at_procs(
    procs: &[usize],
    what: &str,
    scenario: impl Fn(usize, goro::Runtime) + Clone + Send + 'static,
) {
    for &n in procs {
        let f = scenario.clone();
        within(LIMIT, &format!("{what} at procs={n}"), move || f(n, rt(n)));
    }
}

// --------------------------------------------------------------------------
// What the user sees of a swallowed panic: the panic hook's report.
// --------------------------------------------------------------------------

/// Panics seen by the process's panic hook: (thread name, message).
static PANICS: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());

/// Installs (once) a hook that records each panic, then prints it as the
/// default hook does.
fn record_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let p = info.payload();
            let msg = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            let thread = std::thread::current().name().unwrap_or("").to_string();
            PANICS
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((thread, msg));
            prev(info);
        }));
    });
}

/// The names of the threads on which a panic whose message contains
/// `marker` was reported.
fn reported(marker: &str) -> Vec<String> {
    PANICS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .filter(|(_, m)| m.contains(marker))
        .map(|(t, _)| t.clone())
        .collect()
}

// --------------------------------------------------------------------------
// Values and guards
// --------------------------------------------------------------------------

/// Counts its drops.
struct Guard(Arc<AtomicUsize>);
impl Drop for Guard {
    fn drop(&mut self) {
        self.0.fetch_add(1, SeqCst);
    }
}

/// A tracked value whose `Drop` panics (with `msg`) when armed; its
/// `Tracked` is still dropped as the panic unwinds.
struct Bomb {
    _value: Tracked,
    armed: Option<&'static str>,
}

impl Drop for Bomb {
    fn drop(&mut self) {
        if let Some(msg) = self.armed {
            panic!("{msg}");
        }
    }
}

fn bomb(ledger: &Arc<Ledger>, armed: Option<&'static str>) -> Bomb {
    Bomb {
        _value: ledger.make(),
        armed,
    }
}

fn all_dropped_once(ledger: &Ledger, n: usize, what: &str) {
    assert_eq!(ledger.made(), n, "{what}: values made");
    assert_eq!(
        ledger.double_drops(),
        0,
        "{what}: a value was dropped twice"
    );
    assert!(
        ledger.all_dropped(),
        "{what}: {} of {} values dropped",
        ledger.dropped(),
        ledger.made()
    );
}

// --------------------------------------------------------------------------
// The runtime is whole
// --------------------------------------------------------------------------

/// Every P runs a task at the same moment (a P lost with a dead worker
/// thread would leave one task unable to start), a sleep, an `after` and a
/// `Timer` fire, and an unbuffered channel hands a value over.
fn assert_usable(rt: &goro::Runtime, after: &str) {
    let procs = rt.procs();
    let after = after.to_string();
    rt.block_on(async move {
        let arrived = Arc::new(AtomicUsize::new(0));
        let hs: Vec<_> = (0..procs)
            .map(|_| {
                let (a, what) = (arrived.clone(), after.clone());
                goro::spawn(async move {
                    a.fetch_add(1, SeqCst);
                    // Holds this P until every P has a task: needs them all.
                    wait_until(
                        WAIT,
                        &format!("after {what}: all {procs} Ps run a task at once"),
                        || a.load(SeqCst) >= procs,
                    );
                })
            })
            .collect();
        for h in hs {
            h.await.expect("a task on every P");
        }
        let timers = goro::spawn(async {
            goro::time::sleep(Duration::from_millis(1)).await;
            goro::time::after(Duration::from_millis(1))
                .recv()
                .await
                .expect("after fires");
            let t = goro::time::Timer::new(Duration::from_millis(1));
            t.rx().recv().await.expect("a Timer fires");
        });
        goro::time::timeout(WAIT, timers)
            .await
            .unwrap_or_else(|_| panic!("after {after}: timers did not fire within {WAIT:?}"))
            .expect("timer task");
        let (tx, rx) = goro::chan::bounded::<u32>(0);
        let sender = goro::spawn(async move { tx.send(7).await });
        assert_eq!(
            rx.recv().await,
            Ok(7),
            "after {after}: a channel hands over"
        );
        sender.await.unwrap().unwrap();
    });
}

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
// Panics in Drop of values held by channels and pools
// --------------------------------------------------------------------------

/// A channel dropped with buffered values, one of whose `Drop` panics: the
/// panic reaches the task that dropped the last handle (its `JoinHandle`
/// returns `Err(JoinError::Panic)`), every other value is still dropped,
/// each once, and the runtime is usable. A panicking `Drop` of a value the
/// receiver took runs in the receiver's task only.
#[test]
fn a_panicking_drop_of_a_buffered_channel_value_spares_the_others() {
    at_procs(&[1, 2], "chan Drop panic", |_, rt| {
        let ledger = Ledger::new();
        let l = ledger.clone();
        rt.block_on(async move {
            let (tx, rx) = goro::chan::bounded::<Bomb>(8);
            for i in 0..8 {
                let armed = (i == 3).then_some("faults: buffered value's Drop");
                tx.try_send(bomb(&l, armed)).map_err(|_| ()).unwrap();
            }
            let e = goro::spawn(async move {
                drop(tx);
                drop(rx); // the last handle: the buffer goes here
            })
            .await
            .unwrap_err();
            assert!(e.is_panic(), "{e}");

            let (tx, rx) = goro::chan::bounded::<Bomb>(0);
            let sender = goro::spawn(async move {
                tx.send(bomb(&l, Some("faults: received value's Drop")))
                    .await
                    .map_err(|_| ())
            });
            let e = goro::spawn(async move {
                let v = rx.recv().await;
                drop(v);
            })
            .await
            .unwrap_err();
            assert!(e.is_panic(), "the receiver's task panicked: {e}");
            assert_eq!(sender.await.unwrap(), Ok(()), "the sender is unaffected");
        });
        all_dropped_once(&ledger, 9, "channel values beside a panicking one");
        assert_usable(&rt, "a panicking Drop of a channel value");
    });
}

/// A sender parked on a full channel holds its value; aborting that task
/// drops the value in the scheduler (not in any task). When that `Drop`
/// panics, the panic must not escape into the worker thread (which would
/// die holding its P: at procs 1, the whole runtime): it is reported by the
/// hook, the handle says `Cancelled`, and everything is still dropped once.
#[test]
fn a_panicking_drop_of_a_parked_senders_value_on_abort_keeps_the_p() {
    record_panics();
    at_procs(&[1, 2], "abort with a panicking value", |_, rt| {
        let ledger = Ledger::new();
        let l = ledger.clone();
        let parked = Arc::new(AtomicUsize::new(0));
        let pk = parked.clone();
        rt.block_on(async move {
            let (tx, rx) = goro::chan::bounded::<Bomb>(0);
            let hs: Vec<_> = (0..4)
                .map(|_| {
                    let (tx, l, pk) = (tx.clone(), l.clone(), pk.clone());
                    goro::spawn(async move {
                        let v = bomb(&l, Some("faults-parked-send-drop"));
                        pk.fetch_add(1, SeqCst);
                        let _ = tx.send(v).await;
                    })
                })
                .collect();
            let deadline = Instant::now() + WAIT;
            while pk.load(SeqCst) < 4 || !tx.is_empty() {
                assert!(Instant::now() < deadline, "senders parked");
                goro::time::sleep(Duration::from_millis(1)).await;
            }
            for h in &hs {
                h.abort();
            }
            for h in hs {
                assert!(h.await.unwrap_err().is_cancelled());
            }
            drop(rx);
        });
        // `abort` returns before the scheduler has dropped the future.
        wait_until(WAIT, "the aborted senders' values were dropped", || {
            ledger.dropped() == 4
        });
        all_dropped_once(&ledger, 4, "values of aborted senders");
        assert_usable(&rt, "aborting tasks whose values panic on Drop");
    });
}

// --------------------------------------------------------------------------
// Panics in Drop of a task's own future or output
// --------------------------------------------------------------------------

/// A future that completes at once and drops a `Bomb` afterwards (when the
/// scheduler drops the finished future, outside its poll).
struct ReadyWithBomb(#[allow(dead_code)] Option<Bomb>);
impl Future for ReadyWithBomb {
    type Output = u32;
    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<u32> {
        Poll::Ready(5)
    }
}

/// The scheduler drops a task's future when it completes, when it is
/// aborted and at shutdown, and a detached task's output when it finishes:
/// a panic in any of those `Drop`s is reported by the hook and must neither
/// kill the worker thread (losing its P), nor abort the process, nor leave
/// the `JoinHandle` waiting forever. A completed task whose future's `Drop`
/// panicked reports `JoinError::Panic` (as tokio does); an aborted one
/// `Cancelled`.
#[test]
fn a_panicking_drop_of_a_tasks_future_or_output_keeps_the_runtime_whole() {
    record_panics();
    at_procs(&[1, 2], "task Drop panics", |_, rt| {
        let ledger = Ledger::new();
        let l = ledger.clone();
        rt.block_on(async move {
            // Dropped by the scheduler after the future completed.
            for _ in 0..3 {
                let f = ReadyWithBomb(Some(bomb(&l, Some("faults-completed-future-drop"))));
                let e = goro::spawn(f).await.unwrap_err();
                assert!(e.is_panic(), "a completed future's Drop panicked: {e}");
            }
            // Dropped by abort while parked.
            for _ in 0..3 {
                let b = bomb(&l, Some("faults-aborted-future-drop"));
                let h = goro::spawn(async move {
                    let _b = b;
                    std::future::pending::<()>().await
                });
                goro::yield_now().await;
                h.abort();
                assert!(h.await.unwrap_err().is_cancelled());
            }
            // A detached task's output.
            let done = Arc::new(AtomicUsize::new(0));
            for _ in 0..3 {
                let (l, d) = (l.clone(), done.clone());
                drop(goro::spawn(async move {
                    d.fetch_add(1, SeqCst);
                    bomb(&l, Some("faults-detached-output-drop"))
                }));
            }
            let deadline = Instant::now() + WAIT;
            while l.dropped() < 9 {
                assert!(Instant::now() < deadline, "detached outputs dropped");
                goro::time::sleep(Duration::from_millis(1)).await;
            }
        });
        all_dropped_once(&ledger, 9, "futures and outputs dropped by the scheduler");
        assert_usable(&rt, "panicking Drops of futures and outputs");
        // And at shutdown: a panicking Drop of one parked future does
        // not keep the others from being dropped, nor the drop from
        // returning.
        let dropped = Arc::new(AtomicUsize::new(0));
        let (l, d) = (ledger.clone(), dropped.clone());
        rt.block_on(async move {
            for i in 0..10 {
                let b = bomb(&l, (i % 3 == 0).then_some("faults-shutdown-future-drop"));
                let g = Guard(d.clone());
                goro::spawn(async move {
                    let _b = b;
                    let _g = g;
                    std::future::pending::<()>().await
                });
            }
            goro::yield_now().await;
        });
        drop(rt);
        assert_eq!(dropped.load(SeqCst), 10, "every future dropped at shutdown");
        all_dropped_once(&ledger, 19, "futures dropped at shutdown");
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

// --------------------------------------------------------------------------
// Shutdown with tasks parked on every kind of wait
// --------------------------------------------------------------------------

/// Hands out the guards of the tasks under test and records where each one
/// parked.
#[derive(Clone, Default)]
struct Sites {
    spawned: Arc<AtomicUsize>,
    dropped: Arc<AtomicUsize>,
    reached: Arc<Mutex<Vec<&'static str>>>,
}

/// Owned by one task's future: counts the future's drop.
struct Site {
    _guard: Guard,
    reached: Arc<Mutex<Vec<&'static str>>>,
}

impl Sites {
    fn enter(&self) -> Site {
        self.spawned.fetch_add(1, SeqCst);
        Site {
            _guard: Guard(self.dropped.clone()),
            reached: self.reached.clone(),
        }
    }
    fn reached(&self) -> Vec<&'static str> {
        self.reached.lock().unwrap().clone()
    }
}

impl Site {
    /// Marks that the task is about to wait on `what`.
    fn at(&self, what: &'static str) {
        self.reached.lock().unwrap().push(what);
    }
}

const HOUR: Duration = Duration::from_secs(3600);

/// Spawns one task parked on each kind of wait goro has; returns how many
/// `Site::at` marks to expect.
async fn park_everywhere(sites: Sites, ledger: Arc<Ledger>, release: Arc<AtomicBool>) -> usize {
    use goro::chan::bounded;
    use goro::sync::{Mutex as GMutex, OnceCell, RwLock, Semaphore, WaitGroup};
    let mut marks = 0;
    let mut spawn = |f: std::pin::Pin<Box<dyn Future<Output = ()> + Send>>| {
        marks += 1;
        drop(goro::spawn(f));
    };

    // Channels: a send on a full buffer, a send with no receiver, a recv.
    let (s, l) = (sites.enter(), ledger.clone());
    spawn(Box::pin(async move {
        let (tx, rx) = bounded::<Tracked>(2);
        tx.try_send(l.make()).map_err(|_| ()).unwrap();
        tx.try_send(l.make()).map_err(|_| ()).unwrap();
        let _rx = rx;
        s.at("chan send (full buffer)");
        let _ = tx.send(l.make()).await;
    }));
    let (s, l) = (sites.enter(), ledger.clone());
    spawn(Box::pin(async move {
        let (tx, _rx) = bounded::<Tracked>(0);
        s.at("chan send (unbuffered)");
        let _ = tx.send(l.make()).await;
    }));
    let s = sites.enter();
    spawn(Box::pin(async move {
        let (_tx, rx) = bounded::<Tracked>(1);
        s.at("chan recv");
        let _ = rx.recv().await;
    }));
    // select! over two receives and a send.
    let (s, l) = (sites.enter(), ledger.clone());
    spawn(Box::pin(async move {
        let (_ta, ra) = bounded::<Tracked>(0);
        let (_tb, rb) = bounded::<Tracked>(4);
        let (tc, _rc) = bounded::<Tracked>(1);
        tc.try_send(l.make()).map_err(|_| ()).unwrap();
        let v = l.make();
        s.at("select! (recv, recv, send)");
        goro::select! {
            recv(ra) -> _ => {},
            recv(rb) -> _ => {},
            send(tc, v) -> _ => {},
        }
    }));

    // Mutex, RwLock (a reader behind a writer, a writer behind a reader).
    let m = Arc::new(GMutex::new(ledger.make()));
    let (ready_tx, ready_rx) = bounded::<()>(0);
    let (s, mm) = (sites.enter(), m.clone());
    spawn(Box::pin(async move {
        let _g = mm.lock().await;
        s.at("holding a Mutex");
        let _ = ready_tx.send(()).await;
        std::future::pending::<()>().await
    }));
    let s = sites.enter();
    spawn(Box::pin(async move {
        let _ = ready_rx.recv().await;
        s.at("Mutex::lock");
        let _g = m.lock().await;
    }));
    for writer_first in [true, false] {
        let rw = Arc::new(RwLock::new(ledger.make()));
        let (ready_tx, ready_rx) = bounded::<()>(0);
        let (s, r) = (sites.enter(), rw.clone());
        spawn(Box::pin(async move {
            if writer_first {
                let _g = r.write().await;
                s.at("holding an RwLock write");
                let _ = ready_tx.send(()).await;
                std::future::pending::<()>().await
            } else {
                let _g = r.read().await;
                s.at("holding an RwLock read");
                let _ = ready_tx.send(()).await;
                std::future::pending::<()>().await
            }
        }));
        let s = sites.enter();
        spawn(Box::pin(async move {
            let _ = ready_rx.recv().await;
            if writer_first {
                s.at("RwLock::read");
                let _g = rw.read().await;
            } else {
                s.at("RwLock::write");
                let _g = rw.write().await;
            }
        }));
    }

    // WaitGroup, Semaphore, OnceCell (an initializer running, a waiter).
    let s = sites.enter();
    spawn(Box::pin(async move {
        let wg = WaitGroup::new();
        wg.add(1);
        s.at("WaitGroup::wait");
        wg.wait().await;
    }));
    let s = sites.enter();
    spawn(Box::pin(async move {
        let sem = Semaphore::new(0);
        s.at("Semaphore::acquire");
        let _p = sem.acquire().await;
    }));
    let cell = Arc::new(OnceCell::<Tracked>::new());
    let (ready_tx, ready_rx) = bounded::<()>(0);
    let (s, c, l) = (sites.enter(), cell.clone(), ledger.clone());
    spawn(Box::pin(async move {
        c.get_or_init(|| async move {
            s.at("OnceCell init in progress");
            let _ = ready_tx.send(()).await;
            std::future::pending::<()>().await;
            l.make()
        })
        .await;
    }));
    let (s, l) = (sites.enter(), ledger.clone());
    spawn(Box::pin(async move {
        let _ = ready_rx.recv().await;
        s.at("OnceCell::get_or_init behind an initializer");
        cell.get_or_init(|| async move { l.make() }).await;
    }));

    // Time: sleep, Timer, after, Ticker, timeout, contexts.
    let s = sites.enter();
    spawn(Box::pin(async move {
        s.at("sleep");
        goro::time::sleep(HOUR).await;
    }));
    let s = sites.enter();
    spawn(Box::pin(async move {
        let t = goro::time::Timer::new(HOUR);
        s.at("Timer channel");
        let _ = t.rx().recv().await;
    }));
    let s = sites.enter();
    spawn(Box::pin(async move {
        let rx = goro::time::after(HOUR);
        s.at("after channel");
        let _ = rx.recv().await;
    }));
    let s = sites.enter();
    spawn(Box::pin(async move {
        let t = goro::time::Ticker::new(HOUR);
        s.at("Ticker channel");
        let _ = t.rx().recv().await;
    }));
    let s = sites.enter();
    spawn(Box::pin(async move {
        s.at("timeout");
        let _ = goro::time::timeout(HOUR, std::future::pending::<()>()).await;
    }));
    let s = sites.enter();
    spawn(Box::pin(async move {
        let bg = goro::context::Context::background();
        let (ctx, _cancel) = goro::context::Context::with_cancel(&bg);
        let (ctx2, _cancel2) = goro::context::Context::with_timeout(&ctx, HOUR);
        s.at("Context::done");
        goro::select! {
            recv(ctx.done()) -> _ => {},
            recv(ctx2.done()) -> _ => {},
        }
    }));
    // An armed after_func whose callback owns a value, its Timer dropped:
    // only the timer heap holds it (as in Go, dropping a Timer does not
    // stop it).
    let (l, cb_guard) = (ledger.make(), sites.enter());
    drop(goro::time::after_func(HOUR, move || {
        let _ = (&l, &cb_guard);
    }));

    // Net: accept, read, recv_from.
    let s = sites.enter();
    spawn(Box::pin(async move {
        let l = goro::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        s.at("TcpListener::accept");
        let _ = l.accept().await;
    }));
    let s = sites.enter();
    spawn(Box::pin(async move {
        let l = goro::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let c = goro::net::TcpStream::connect(l.local_addr().unwrap())
            .await
            .unwrap();
        let (srv, _) = l.accept().await.unwrap();
        let _c = c;
        s.at("TcpStream::read");
        let mut buf = [0u8; 16];
        let _ = srv.read(&mut buf).await;
    }));
    let s = sites.enter();
    spawn(Box::pin(async move {
        let u = goro::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
        s.at("UdpSocket::recv_from");
        let mut buf = [0u8; 16];
        let _ = u.recv_from(&mut buf).await;
    }));

    // A JoinHandle of another parked task, and of a running blocking closure.
    let (s, inner) = (sites.enter(), sites.enter());
    spawn(Box::pin(async move {
        let h = goro::spawn(async move {
            inner.at("pending (awaited by another task)");
            std::future::pending::<()>().await
        });
        s.at("JoinHandle of a parked task");
        let _ = h.await;
    }));
    let (s, l, r) = (sites.enter(), ledger.clone(), release.clone());
    spawn(Box::pin(async move {
        let v = l.make();
        let h = goro::spawn_blocking(move || {
            let _v = v;
            wait_until(WAIT, "released (spawn_blocking)", || r.load(SeqCst));
        });
        s.at("JoinHandle of spawn_blocking");
        let _ = h.await;
    }));

    // block_in_place in progress: the drop waits for the closure.
    let (s, l, r) = (sites.enter(), ledger.clone(), release.clone());
    spawn(Box::pin(async move {
        let _v = l.make();
        s.at("block_in_place");
        goro::block_in_place(|| {
            wait_until(WAIT, "released (block_in_place)", || r.load(SeqCst));
        });
        std::future::pending::<()>().await
    }));

    // A pool holding values, owned by a parked task.
    let (s, l) = (sites.enter(), ledger.clone());
    spawn(Box::pin(async move {
        let l2 = l.clone();
        let pool = goro::sync::Pool::new(move || l2.make());
        let vals: Vec<_> = (0..5).map(|_| pool.get()).collect();
        for v in vals {
            pool.put(v);
        }
        s.at("pending while owning a Pool");
        std::future::pending::<()>().await
    }));

    // One mark per spawned closure, plus the inner task's, minus the
    // after_func guard (no task).
    marks + 1
}

/// Dropping a runtime while tasks are parked on every kind of wait (channel
/// send on a full buffer and unbuffered, recv, `select!`, Mutex, RwLock read
/// and write, WaitGroup, Semaphore, OnceCell init in progress and its
/// waiter, sleep, Timer, after, Ticker, timeout, contexts, TCP accept and
/// read, UDP recv_from, a JoinHandle of a parked task and of a running
/// `spawn_blocking`, `block_in_place` in progress, a task owning a Pool)
/// completes within a deadline (a watchdog thread), drops every task's
/// future and the `after_func` callback once, and every value held by a
/// channel, lock, cell or pool exactly once.
#[test]
fn shutdown_with_tasks_parked_on_every_kind_of_wait_drops_everything_once() {
    at_procs(&[1, 3], "shutdown", |procs, rt| {
        let sites = Sites::default();
        let ledger = Ledger::new();
        let release = Arc::new(AtomicBool::new(false));
        let (s, l, r) = (sites.clone(), ledger.clone(), release.clone());
        let marks = rt.block_on(park_everywhere(s, l, r));
        wait_until(WAIT, "every task reached its wait", || {
            sites.reached().len() == marks
        });
        // Parked, not just about to: nothing runnable anywhere (the
        // block_in_place thread holds no P).
        wait_until(WAIT, "the runtime is idle", || {
            let t = rt.schedtrace();
            t.contains(&format!("idleprocs={procs} "))
                && t.contains("runqueue=0 ")
                && t.contains("spinningthreads=0 ")
        });
        let spawned = sites.spawned.load(SeqCst);
        assert_eq!(
            sites.dropped.load(SeqCst),
            0,
            "nothing dropped before shutdown"
        );

        // The block_in_place closure returns once the drop has begun or
        // just before: either way the drop must wait for it.
        release.store(true, SeqCst);
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let dropper = std::thread::spawn(move || {
            drop(rt);
            let _ = done_tx.send(());
        });
        done_rx
            .recv_timeout(WAIT)
            .unwrap_or_else(|_| panic!("dropping the runtime did not complete within {WAIT:?}"));
        dropper.join().unwrap();
        assert_eq!(
            sites.dropped.load(SeqCst),
            spawned,
            "every future (and the after_func callback) dropped, once; parked at {:?}",
            sites.reached()
        );
        // A dropped pool's values and the spawn_blocking closure's go
        // a moment later (reclaimer thread, blocking thread).
        assert!(
            goro::sync::pool::wait_reclaimed(WAIT),
            "pool values reclaimed"
        );
        wait_until(WAIT, "every value dropped", || {
            ledger.dropped() == ledger.made()
        });
        all_dropped_once(&ledger, ledger.made(), "values held by parked tasks");
    });
}

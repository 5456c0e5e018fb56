//! Go's two scheduling guarantees, each checked with a deadline:
//!
//! * **Hand-off**: a task made ready while its P stays busy in one long
//!   poll starts on an idle P (seed 004's wake, `sched/processor/idle.rs`).
//! * **Cooperative preemption**: a task whose operations never block does
//!   not starve the tasks queued behind it (`sched/task/coop.rs`).
//!
//! The busy polls below spin on a flag with a deadline, never on a sleep:
//! the test passes as soon as the other task has run, and fails with a
//! message if it has not within the limit.

mod support;

use goro::chan::bounded;
use goro::{Policy, Runtime};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::within;

const LIMIT: Duration = Duration::from_secs(30);

fn rt(procs: usize, policy: &str) -> Runtime {
    Runtime::builder()
        .procs(procs)
        .policy(Policy::default().with_overrides(policy).unwrap())
        .build()
        .unwrap()
}

/// Spins in the current poll (no await) until `flag` is set or `limit`
/// passes; returns whether the flag was set.
fn busy_until(flag: &AtomicBool, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while !flag.load(Ordering::Acquire) {
        if Instant::now() >= deadline {
            return false;
        }
        std::hint::spin_loop();
    }
    true
}

#[test]
fn a_spawned_child_runs_while_its_parents_poll_is_busy() {
    within(LIMIT, "spawn hand-off at procs 2", || {
        let rt = rt(2, "");
        rt.block_on(async {
            goro::spawn(async {
                for rep in 0..20 {
                    let ran = Arc::new(AtomicBool::new(false));
                    let r = ran.clone();
                    let child = goro::spawn(async move { r.store(true, Ordering::Release) });
                    // The child sits in this P's runnext while we stay in
                    // this poll: only another P can run it.
                    assert!(
                        busy_until(&ran, Duration::from_secs(5)),
                        "rep {rep}: the child did not run within 5 s while its parent's poll was busy"
                    );
                    child.await.unwrap();
                }
            })
            .await
            .unwrap()
        });
        assert!(
            rt.stats().steals > 0,
            "the children were stolen: {:?}",
            rt.stats()
        );
    });
}

#[test]
fn a_woken_task_runs_while_its_wakers_poll_is_busy() {
    within(LIMIT, "wake hand-off at procs 2", || {
        let rt = rt(2, "");
        rt.block_on(async {
            goro::spawn(async {
                let (tx, rx) = bounded::<Arc<AtomicBool>>(1);
                let (parked_tx, parked_rx) = bounded::<()>(1);
                let waiter = goro::spawn(async move {
                    loop {
                        parked_tx.send(()).await.unwrap();
                        let Ok(flag) = rx.recv().await else { return };
                        flag.store(true, Ordering::Release);
                    }
                });
                for rep in 0..20 {
                    parked_rx.recv().await.unwrap();
                    let ran = Arc::new(AtomicBool::new(false));
                    // Whether or not the waiter has parked yet, it can only
                    // see the value from another P while we stay busy.
                    tx.send(ran.clone()).await.unwrap();
                    assert!(
                        busy_until(&ran, Duration::from_secs(5)),
                        "rep {rep}: the woken task did not run within 5 s while its waker's poll was busy"
                    );
                }
                tx.close();
                waiter.await.unwrap();
            })
            .await
            .unwrap()
        });
    });
}

/// A task looping `send` + `recv` on its own channel (neither ever blocks)
/// beside a task that needs the P: Go's 10 ms preemption and tokio's
/// budget both let the second one run.
#[test]
fn a_task_whose_operations_never_block_does_not_starve_its_p() {
    within(LIMIT, "hog beside a sleeper at procs 1", || {
        let rt = rt(1, "");
        let (naps, hog_iters) = rt.block_on(async {
            let stop = Arc::new(AtomicBool::new(false));
            let s = stop.clone();
            let hog = goro::spawn(async move {
                let (tx, rx) = bounded::<u64>(1);
                let mut i = 0u64;
                while !s.load(Ordering::Acquire) {
                    tx.send(i).await.unwrap();
                    assert_eq!(rx.recv().await.unwrap(), i);
                    i += 1;
                }
                i
            });
            let sleeper = goro::spawn(async move {
                for _ in 0..20 {
                    goro::time::sleep(Duration::from_millis(1)).await;
                }
                stop.store(true, Ordering::Release);
                20
            });
            (sleeper.await.unwrap(), hog.await.unwrap())
        });
        assert_eq!(naps, 20);
        assert!(hog_iters > 0, "the hog ran");
        assert!(
            rt.stats().preemptions > 0,
            "the hog was preempted: {:?}",
            rt.stats()
        );
    });
}

/// Go's `BenchmarkPingPongHog` shape: a task polling a `select!` with a
/// `default` arm forever beside a ping-pong, at procs 1. The `select!` is
/// itself a safe point (Go's shape verbatim: `chan_select_safe_point.rs`);
/// this hog also awaits `consume_budget`, the safe point for loops of
/// other non-blocking operations, so it spends two units per turn.
#[test]
fn gos_ping_pong_hog_completes_at_procs_1() {
    within(LIMIT, "PingPongHog at procs 1", || {
        let rt = rt(1, "");
        rt.block_on(async {
            let (stop_tx, stop_rx) = bounded::<()>(0);
            let hog = goro::spawn(async move {
                let mut spins = 0u64;
                loop {
                    goro::select! {
                        recv(stop_rx) -> _ => return spins,
                        default => spins += 1,
                    }
                    goro::coop::consume_budget().await;
                }
            });
            let (ping_tx, ping_rx) = bounded::<u32>(0);
            let (pong_tx, pong_rx) = bounded::<u32>(0);
            const N: u32 = 10_000;
            let ponger = goro::spawn(async move {
                for _ in 0..N {
                    let v = ping_rx.recv().await.unwrap();
                    pong_tx.send(v + 1).await.unwrap();
                }
            });
            let mut v = 0;
            for _ in 0..N {
                ping_tx.send(v).await.unwrap();
                v = pong_rx.recv().await.unwrap();
            }
            assert_eq!(v, N);
            ponger.await.unwrap();
            stop_tx.close();
            assert!(hog.await.unwrap() > 0, "the hog ran between the ping-pongs");
        });
    });
}

/// A producer whose sends never block (the buffer never fills) is
/// preempted every few operations; every value still arrives once, in
/// order, and the producer runs to the end.
#[test]
fn a_preempted_task_loses_no_message_and_runs_again() {
    within(LIMIT, "preempted producer at procs 1 and 2", || {
        for procs in [1, 2] {
            let rt = rt(procs, "preempt=4");
            const N: u64 = 50_000;
            let got = rt.block_on(async {
                let (tx, rx) = bounded::<u64>(N as usize);
                let producer = goro::spawn(async move {
                    for i in 0..N {
                        tx.send(i).await.unwrap();
                    }
                });
                let consumer = goro::spawn(async move {
                    let mut got = Vec::with_capacity(N as usize);
                    while let Ok(v) = rx.recv().await {
                        got.push(v);
                    }
                    got
                });
                producer.await.unwrap();
                consumer.await.unwrap()
            });
            assert_eq!(got.len() as u64, N, "procs {procs}: every value arrived");
            assert!(
                got.iter().enumerate().all(|(i, &v)| v == i as u64),
                "procs {procs}: in order, once each"
            );
            assert!(
                rt.stats().preemptions > 0,
                "procs {procs}: preempted: {:?}",
                rt.stats()
            );
        }
    });
}

/// Every kind of safe point yields once the budget is spent: each loop
/// below completes its operations at once, and a task queued behind it on
/// the one P gets to run before the loop ends.
#[test]
fn every_goro_operation_is_a_safe_point() {
    within(LIMIT, "safe points at procs 1", || {
        let rt = rt(1, "preempt=8");
        rt.block_on(async {
            macro_rules! check {
                ($what:literal, $op:expr) => {{
                    let other = Arc::new(AtomicBool::new(false));
                    let o = other.clone();
                    goro::spawn(async move {
                        let mut ran_before_end = false;
                        // Queued behind the loop on the same P.
                        let marker = goro::spawn(async move { o.store(true, Ordering::Release) });
                        for _ in 0..1_000 {
                            $op;
                            if other.load(Ordering::Acquire) {
                                ran_before_end = true;
                                break;
                            }
                        }
                        marker.await.unwrap();
                        assert!(
                            ran_before_end,
                            "{}: the queued task ran before the loop ended",
                            $what
                        );
                    })
                    .await
                    .unwrap();
                }};
            }
            let (tx, rx) = bounded::<u8>(1);
            check!("send+recv", {
                tx.send(1).await.unwrap();
                rx.recv().await.unwrap()
            });
            let (tx2, rx2) = bounded::<u8>(1);
            check!("select!", {
                goro::select! {
                    send(tx2, 1) -> r => r.unwrap(),
                }
                rx2.recv().await.unwrap();
            });
            let m = goro::sync::Mutex::new(0);
            check!("Mutex::lock", *m.lock().await += 1);
            let l = goro::sync::RwLock::new(0);
            check!("RwLock::write", *l.write().await += 1);
            let s = goro::sync::Semaphore::new(1);
            check!("Semaphore::acquire", drop(s.acquire().await));
            let wg = goro::sync::WaitGroup::new();
            check!("WaitGroup::wait", wg.wait().await);
            check!("sleep(0)", goro::time::sleep(Duration::ZERO).await);
            let finished = goro::sync::WaitGroup::new();
            finished.add(1_000);
            let mut handles: Vec<_> = (0..1_000)
                .map(|i| {
                    let f = finished.clone();
                    goro::spawn(async move {
                        f.done();
                        i
                    })
                })
                .collect();
            finished.wait().await;
            check!("JoinHandle", handles.pop().unwrap().await.unwrap());
            check!("consume_budget", goro::coop::consume_budget().await);
        });
        assert!(rt.stats().preemptions >= 9, "{:?}", rt.stats());
    });
}

#[test]
fn preemption_off_restores_run_to_completion() {
    within(LIMIT, "preempt=off at procs 1", || {
        let rt = rt(1, "preempt=off");
        let order = rt.block_on(async {
            let seq = Arc::new(AtomicU64::new(0));
            let (s1, s2) = (seq.clone(), seq.clone());
            let hog = goro::spawn(async move {
                let (tx, rx) = bounded::<u32>(1);
                for i in 0..10_000 {
                    tx.send(i).await.unwrap();
                    rx.recv().await.unwrap();
                }
                s1.fetch_add(1, Ordering::SeqCst)
            });
            let other = goro::spawn(async move { s2.fetch_add(1, Ordering::SeqCst) });
            (hog.await.unwrap(), other.await.unwrap())
        });
        assert_eq!(
            order,
            (0, 1),
            "the hog ran to completion before the other task"
        );
        assert_eq!(rt.stats().preemptions, 0);
    });
}

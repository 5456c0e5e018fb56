//! `select!` with `default` is a safe point (it spends the task's budget
//! and yields once it is spent), so a loop that spins on it, with no other
//! await, does not starve the tasks sharing its P: Go's
//! `BenchmarkPingPongHog` (`runtime/proc_test.go`) written verbatim. And a
//! `select!` case takes anything that derefs to a channel end, as
//! crossbeam's `select!` does (its `tests/select_macro.rs`, `deref`).

mod support;

use goro::chan::{bounded, Receiver, Sender};
use goro::Runtime;
use std::ops::Deref;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;
use support::within;

/// A hang here is a starved task: the test fails with its message instead.
const LIMIT: Duration = Duration::from_secs(10);

fn rt(procs: usize) -> Runtime {
    Runtime::builder().procs(procs).build().unwrap()
}

/// At procs 1, a task spinning on `select! { recv(stop) .., default => {} }`
/// (no other await) lets a task that sleeps 1 ms run, close `stop`, and so
/// end the spin.
#[test]
fn spinning_select_with_default_does_not_starve_a_sleeper_at_procs_1() {
    let (spins, preemptions) = within(
        LIMIT,
        "a task spinning on `select!` with `default` starved the task that closes `stop` \
         (procs 1): `select!` with `default` is not a safe point",
        || {
            let rt = rt(1);
            let spins = rt.block_on(async {
                let (stop_tx, stop_rx) = bounded::<()>(0);
                let spinner = goro::spawn(async move {
                    let mut spins = 0u64;
                    loop {
                        goro::select! {
                            recv(stop_rx) -> _ => return spins,
                            default => spins += 1,
                        }
                    }
                });
                let closer = goro::spawn(async move {
                    goro::time::sleep(Duration::from_millis(1)).await;
                    stop_tx.close();
                });
                closer.await.unwrap();
                spinner.await.unwrap()
            });
            (spins, rt.stats().preemptions)
        },
    );
    assert!(spins > 0, "the spinner ran before `stop` closed");
    assert!(
        preemptions > 0,
        "the spinner yielded by running out of budget ({spins} spins, no preemption)"
    );
}

/// Go's `BenchmarkPingPongHog`, line for line: the hog awaits nothing but
/// its `select!` with `default`. `n` round trips, then every task ends.
fn ping_pong_hog(procs: usize, n: u32) {
    let rt = rt(procs);
    rt.block_on(async move {
        // The benchmark goroutine is a task too, sharing the P(s).
        goro::spawn(async move {
            // Create a CPU hog
            let (stop_tx, stop) = bounded::<bool>(0);
            let (done_tx, done) = bounded::<bool>(0);
            {
                let (stop, done) = (stop.clone(), done_tx.clone());
                goro::spawn(async move {
                    loop {
                        goro::select! {
                            recv(stop) -> _ => {
                                done.send(true).await.unwrap();
                                return;
                            }
                            default => {}
                        }
                    }
                });
            }
            // Ping-pong n times
            let (ping_tx, ping) = bounded::<bool>(0);
            let (pong_tx, pong) = bounded::<bool>(0);
            {
                let (ping, pong_tx, done) = (ping.clone(), pong_tx, done_tx.clone());
                goro::spawn(async move {
                    for _ in 0..n {
                        pong_tx.send(ping.recv().await.unwrap()).await.unwrap();
                    }
                    stop_tx.close();
                    done.send(true).await.unwrap();
                });
            }
            {
                let (ping_tx, done) = (ping_tx.clone(), done_tx);
                goro::spawn(async move {
                    for _ in 0..n {
                        ping_tx.send(pong.recv().await.unwrap()).await.unwrap();
                    }
                    done.send(true).await.unwrap();
                });
            }
            ping_tx.send(true).await.unwrap(); // Start ping-pong
            assert!(
                stop.recv().await.is_err(),
                "`stop` is closed, never sent on"
            );
            ping.recv().await.unwrap(); // Let last ponger exit
            for _ in 0..3 {
                done.recv().await.unwrap(); // Make sure goroutines exit
            }
        })
        .await
        .unwrap();
    });
}

#[test]
fn gos_ping_pong_hog_verbatim_finishes_at_procs_1() {
    within(
        LIMIT,
        "Go's PingPongHog at procs 1: the hog (a `select!` with `default`, no other await) \
         starved the ping-pong",
        || ping_pong_hog(1, 10_000),
    );
}

#[test]
fn gos_ping_pong_hog_verbatim_finishes_at_procs_2() {
    within(
        LIMIT,
        "Go's PingPongHog at procs 2: the hog starved the ping-pong",
        || ping_pong_hog(2, 10_000),
    );
}

/// The safe point comes before the look at the channels: a select that ran
/// out of budget yields, then looks, so a case ready at every moment is
/// taken every time, across many preemptions.
#[test]
fn a_ready_case_is_taken_across_preemptions() {
    const N: u32 = 20_000;
    let rt = rt(1);
    let taken = within(LIMIT, "a loop of selects over a ready channel", move || {
        rt.block_on(async {
            goro::spawn(async {
                let (tx, rx) = bounded::<u32>(1);
                let mut taken = 0;
                for i in 0..N {
                    tx.try_send(i).unwrap();
                    goro::select! {
                        recv(rx) -> v => { assert_eq!(v, Ok(i)); taken += 1; }
                        default => panic!("round {i}: `default` taken with a value buffered"),
                    }
                }
                taken
            })
            .await
            .unwrap()
        })
    });
    assert_eq!(taken, N);
}

/// crossbeam's `deref` test: a wrapper whose `Deref` target is a channel end.
struct Wrapper<T>(Receiver<T>);

impl<T> Deref for Wrapper<T> {
    type Target = Receiver<T>;
    fn deref(&self) -> &Receiver<T> {
        &self.0
    }
}

struct SendWrapper<T>(Sender<T>);

impl<T> Deref for SendWrapper<T> {
    type Target = Sender<T>;
    fn deref(&self) -> &Sender<T> {
        &self.0
    }
}

#[test]
fn select_blocking_takes_anything_that_derefs_to_a_channel_end() {
    let (tx, rx) = bounded::<i32>(4);
    let wrapped = Wrapper(rx.clone());
    let shared: Arc<Receiver<i32>> = Arc::new(rx.clone());
    let boxed: Box<Sender<i32>> = Box::new(tx.clone());
    let send_wrapped = SendWrapper(tx.clone());
    let nested: Arc<Wrapper<i32>> = Arc::new(Wrapper(rx.clone()));
    let rc: Rc<Receiver<i32>> = Rc::new(rx.clone());

    goro::select_blocking! { send(boxed, 1) -> r => r.unwrap() }
    goro::select_blocking! { send(send_wrapped, 2) -> r => r.unwrap() }
    goro::select_blocking! { send(&boxed, 3) -> r => r.unwrap() }
    assert_eq!(goro::select_blocking! { recv(wrapped) -> v => v }, Ok(1));
    assert_eq!(goro::select_blocking! { recv(shared) -> v => v }, Ok(2));
    assert_eq!(
        goro::select_blocking! { recv(&nested) -> v => v, default => Err(goro::chan::RecvError) },
        Ok(3)
    );
    let nothing = goro::select_blocking! {
        recv(wrapped) -> _ => false,
        recv(shared) -> _ => false,
        recv(nested) -> _ => false,
        recv(rc) -> _ => false,
        default => true,
    };
    assert!(nothing, "every wrapper names the same empty channel");
    // A wrapped sender in a select with `default`, then one that waits.
    let sent = goro::select_blocking! {
        send(boxed, 4) -> r => r.is_ok(),
        default => false,
    };
    assert!(sent);
    assert_eq!(rx.try_recv(), Ok(4));
    let waiting = std::thread::spawn(move || {
        goro::select_blocking! {
            recv(shared) -> v => v,
            recv(goro::chan::never::<i32>()) -> v => v,
        }
    });
    tx.send_blocking(5).unwrap();
    assert_eq!(waiting.join().unwrap(), Ok(5));
}

#[test]
fn select_takes_anything_that_derefs_to_a_channel_end() {
    let (tx, rx) = bounded::<i32>(4);
    let rt = rt(2);
    let got = within(LIMIT, "`select!` over wrapped channel ends", move || {
        rt.block_on(async move {
            let wrapped = Wrapper(rx.clone());
            let shared: Arc<Receiver<i32>> = Arc::new(rx.clone());
            let boxed: Box<Sender<i32>> = Box::new(tx.clone());
            let send_wrapped = SendWrapper(tx.clone());

            goro::select! { send(boxed, 1) -> r => r.unwrap() }
            goro::select! { send(send_wrapped, 2) -> r => r.unwrap(), default => panic!("room for 2") }
            let a = goro::select! { recv(wrapped) -> v => v.unwrap() };
            let b = goro::select! { recv(shared) -> v => v.unwrap(), default => 0 };
            // A select that waits on wrapped ends, completed by another task.
            let feeder = {
                let tx = tx.clone();
                goro::spawn(async move { tx.send(3).await.unwrap() })
            };
            let c = goro::select! {
                recv(shared) -> v => v.unwrap(),
                recv(wrapped) -> v => v.unwrap(),
            };
            feeder.await.unwrap();
            // The task's future stays `Send` with wrapped ends in its selects.
            let shared2 = shared.clone();
            let d = goro::spawn(async move {
                let boxed: Box<Sender<i32>> = Box::new(tx);
                goro::select! { send(boxed, 4) -> r => r.unwrap() }
                goro::select! { recv(shared2) -> v => v.unwrap(), default => 0 }
            })
            .await
            .unwrap();
            vec![a, b, c, d]
        })
    });
    assert_eq!(got, vec![1, 2, 3, 4]);
}

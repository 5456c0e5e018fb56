//! `select!`'s `await(future) -> pat => body` case: a future raced against
//! channel cases. Who wins when one or both are ready, what happens to the
//! loser (a losing future is dropped before any body runs; a channel
//! operation that is not taken never happens), the random and the biased
//! choice, the safe point, futures that are not `Unpin`, and bodies that
//! `?`, `break` or borrow what the future borrowed.

mod support;

use std::future::Future;
use std::marker::PhantomPinned;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use goro::chan;
use support::chan::*;

fn rt(procs: usize) -> goro::Runtime {
    goro::Runtime::builder().procs(procs).build().unwrap()
}

/// A future that never completes and sets `dropped` when dropped.
struct PendingWithFlag(Arc<AtomicBool>);

impl Future for PendingWithFlag {
    type Output = u8;
    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<u8> {
        Poll::Pending
    }
}

impl Drop for PendingWithFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// A future that is ready at once and cannot be moved once polled.
struct NotUnpin {
    value: u32,
    _pin: PhantomPinned,
}

impl Future for NotUnpin {
    type Output = u32;
    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<u32> {
        Poll::Ready(self.value)
    }
}

#[test]
fn a_ready_future_wins_over_a_pending_channel() {
    let (_tx, rx) = chan::bounded::<u8>(1);
    let got = ready("select with a ready future and an empty channel", async {
        goro::select! {
            recv(rx) -> m => format!("recv {m:?}"),
            await(async { 5u8 }) -> v => format!("future {v}"),
        }
    });
    assert_eq!(got, "future 5");
}

#[test]
fn a_ready_channel_wins_over_a_pending_future_which_is_dropped_before_the_body() {
    let (tx, rx) = chan::bounded::<u8>(1);
    tx.try_send(9).unwrap();
    let dropped = Arc::new(AtomicBool::new(false));
    let flag = dropped.clone();
    let (got, dropped_in_body) = ready("select with a ready channel and a pending future", async {
        goro::select! {
            recv(rx) -> m => (m, flag.load(Ordering::SeqCst)),
            await(PendingWithFlag(flag.clone())) -> v => panic!("the pending future completed with {v}"),
        }
    });
    assert_eq!(got, Ok(9));
    assert!(
        dropped_in_body,
        "the losing future was still alive when the winning body ran"
    );
    assert!(dropped.load(Ordering::SeqCst));
}

/// Both ready at the same poll: over many trials each wins sometimes
/// (Go's uniform choice), and a value is received exactly when the recv
/// case wins: a value left behind is still in the channel.
#[test]
fn both_ready_each_wins_sometimes_and_no_channel_value_is_lost() {
    const TRIALS: u32 = 2000;
    let (tx, rx) = chan::bounded::<u32>(1);
    let (mut by_chan, mut by_future, mut left) = (0u32, 0u32, 0u32);
    for i in 0..TRIALS {
        tx.try_send(i).unwrap();
        let chan_won = ready("both cases ready", async {
            goro::select! {
                recv(rx) -> m => { assert_eq!(m, Ok(i)); true }
                await(std::future::ready(())) -> () => false,
            }
        });
        if chan_won {
            by_chan += 1;
        } else {
            by_future += 1;
            assert_eq!(rx.try_recv(), Ok(i), "the value of trial {i} was lost");
            left += 1;
        }
        assert!(rx.is_empty());
    }
    assert_eq!(
        by_chan + left,
        TRIALS,
        "sent {TRIALS}, received {}",
        by_chan + left
    );
    // Each side wins with probability 1/2: below 700 of 2000 is a p < 1e-40 event.
    assert!(
        by_chan > 700 && by_future > 700,
        "not a uniform choice: channel won {by_chan}, future won {by_future} of {TRIALS}"
    );
}

/// A send case that loses to a ready future never delivers its value.
#[test]
fn a_send_case_that_loses_to_a_future_sends_nothing() {
    let (tx, rx) = chan::bounded::<u32>(1);
    let mut sent = 0;
    for i in 0..200 {
        let sent_now = ready("a ready send and a ready future", async {
            goro::select! {
                send(tx, i) -> r => { r.unwrap(); true }
                await(std::future::ready(())) -> () => false,
            }
        });
        if sent_now {
            sent += 1;
            assert_eq!(rx.try_recv(), Ok(i));
        }
        assert!(
            rx.is_empty(),
            "trial {i}: a send that lost delivered its value"
        );
    }
    assert!(
        sent > 0 && sent < 200,
        "one side always won: {sent} sends of 200"
    );
}

#[test]
fn biased_picks_the_first_ready_case_in_source_order() {
    let (tx, rx) = chan::bounded::<u8>(1);
    for _ in 0..100 {
        tx.try_send(1).unwrap();
        let first = ready("biased, future first", async {
            goro::select! {
                biased;
                await(async { "future" }) -> v => v,
                recv(rx) -> _ => "channel",
            }
        });
        assert_eq!(first, "future");
        assert_eq!(
            rx.try_recv(),
            Ok(1),
            "the channel case that lost took the value"
        );

        tx.try_send(2).unwrap();
        let first = ready("biased, channel first", async {
            goro::select! {
                biased;
                recv(rx) -> _ => "channel",
                await(async { "future" }) -> v => v,
            }
        });
        assert_eq!(first, "channel");
    }
}

#[test]
fn biased_with_default_picks_source_order_too() {
    let (tx, rx) = chan::bounded::<u8>(1);
    for _ in 0..100 {
        tx.try_send(1).unwrap();
        let first = ready("biased with default, channel first", async {
            goro::select! {
                biased;
                recv(rx) -> _ => "channel",
                await(async { "future" }) -> v => v,
                default => "default",
            }
        });
        assert_eq!(first, "channel");
        tx.try_send(1).unwrap();
        let first = ready("biased with default, future first", async {
            goro::select! {
                biased;
                await(async { "future" }) -> v => v,
                recv(rx) -> _ => "channel",
                default => "default",
            }
        });
        assert_eq!(first, "future");
        assert_eq!(rx.try_recv(), Ok(1));
    }
}

/// With `default`, a future is polled once: ready now, or dropped.
#[test]
fn with_default_a_pending_future_is_polled_once_and_dropped() {
    let (_tx, rx) = chan::bounded::<u8>(1);
    let dropped = Arc::new(AtomicBool::new(false));
    let flag = dropped.clone();
    let got = ready("select with default and a pending future", async {
        goro::select! {
            recv(rx) -> _ => "channel",
            await(PendingWithFlag(flag)) -> _ => "future",
            default => "default",
        }
    });
    assert_eq!(got, "default");
    assert!(
        dropped.load(Ordering::SeqCst),
        "the pending future was not dropped"
    );

    let got = ready("select with default and a ready future", async {
        goro::select! {
            recv(rx) -> _ => "channel",
            await(async {}) -> () => "future",
            default => "default",
        }
    });
    assert_eq!(got, "future");
}

/// Neither ready at first: the select parks, and a future that becomes
/// ready later (a timer) wakes it and wins.
#[test]
fn a_parked_select_is_woken_by_its_future() {
    let got = within("a select parked on a channel and a sleep", || {
        rt(1).block_on(async {
            let (_tx, rx) = chan::bounded::<u8>(0);
            goro::select! {
                recv(rx) -> _ => "channel",
                await(goro::time::sleep(Duration::from_millis(2))) -> () => "slept",
            }
        })
    });
    assert_eq!(got, "slept");
}

/// Neither ready at first: a channel that becomes ready later wins, and
/// the pending future is dropped.
#[test]
fn a_parked_select_is_completed_by_its_channel() {
    let dropped = Arc::new(AtomicBool::new(false));
    let flag = dropped.clone();
    let got = within(
        "a select parked on a channel and a pending future",
        move || {
            rt(2).block_on(async move {
            let (tx, rx) = chan::bounded::<u8>(0);
            let sender = goro::spawn(async move { tx.send(4).await });
            let got = goro::select! {
                recv(rx) -> m => m,
                await(PendingWithFlag(flag)) -> v => panic!("the pending future completed with {v}"),
            };
            sender.await.unwrap().unwrap();
            got
        })
        },
    );
    assert_eq!(got, Ok(4));
    assert!(dropped.load(Ordering::SeqCst));
}

/// Two producers, one on a channel case and one behind a future case
/// (`rx.recv()`, itself cancel-safe), a select that parks, is woken by
/// either and withdraws: every value sent arrives exactly once, in order.
fn no_value_lost_between_a_recv_case_and_a_recv_future(procs: usize) {
    const N: u32 = 2000;
    let (a, b) = within("two producers raced through one select", move || {
        rt(procs).block_on(async {
            let (tx_a, rx_a) = chan::bounded::<u32>(0);
            let (tx_b, rx_b) = chan::bounded::<u32>(0);
            let pa = goro::spawn(async move {
                for i in 0..N {
                    tx_a.send(i).await.unwrap();
                }
                tx_a // kept open: a closed channel would always be ready
            });
            let pb = goro::spawn(async move {
                for i in 0..N {
                    tx_b.send(i).await.unwrap();
                }
                tx_b // kept open: a closed channel would always be ready
            });
            let (mut a, mut b) = (Vec::new(), Vec::new());
            while a.len() + b.len() < 2 * N as usize {
                goro::select! {
                    recv(rx_a) -> v => a.push(v.unwrap()),
                    await(rx_b.recv()) -> v => b.push(v.unwrap()),
                }
            }
            drop((pa.await.unwrap(), pb.await.unwrap()));
            (a, b)
        })
    });
    let want: Vec<u32> = (0..N).collect();
    assert_eq!(
        a, want,
        "values of the channel case lost, repeated or reordered"
    );
    assert_eq!(
        b, want,
        "values of the future case lost, repeated or reordered"
    );
}

#[test]
fn no_value_lost_between_a_recv_case_and_a_recv_future_procs_1() {
    no_value_lost_between_a_recv_case_and_a_recv_future(1);
}

#[test]
fn no_value_lost_between_a_recv_case_and_a_recv_future_procs_2() {
    no_value_lost_between_a_recv_case_and_a_recv_future(2);
}

/// At procs 1, a task looping on a select whose future case is always
/// ready (no other await) still lets a sleeper run and close `stop`: the
/// select is a safe point.
#[test]
fn a_loop_on_a_select_with_a_ready_future_does_not_starve_at_procs_1() {
    let spins = within(
        "a task spinning on `select!` with a ready future case",
        || {
            rt(1).block_on(async {
                let (stop_tx, stop_rx) = chan::bounded::<()>(0);
                let spinner = goro::spawn(async move {
                    let mut spins = 0u64;
                    loop {
                        goro::select! {
                            recv(stop_rx) -> _ => return spins,
                            await(std::future::ready(())) -> () => spins += 1,
                        }
                    }
                });
                let closer = goro::spawn(async move {
                    goro::time::sleep(Duration::from_millis(1)).await;
                    stop_tx.close();
                });
                closer.await.unwrap();
                spinner.await.unwrap()
            })
        },
    );
    assert!(spins > 0, "the spinner ran before `stop` closed");
}

#[test]
fn futures_that_are_not_unpin_are_pinned_in_place() {
    let (_tx, rx) = chan::bounded::<u32>(1);
    let got = ready("a !Unpin future case", async {
        goro::select! {
            recv(rx) -> _ => 0,
            await(NotUnpin { value: 3, _pin: PhantomPinned }) -> v => v,
        }
    });
    assert_eq!(got, 3);
    // An async block that holds a borrow across an await is !Unpin too.
    let got = within("a !Unpin async block as a future case", || {
        rt(1).block_on(async {
            let (_tx, rx) = chan::bounded::<u32>(1);
            goro::select! {
                recv(rx) -> _ => 0,
                await(async {
                    let local = [7u32; 4];
                    let r = &local;
                    goro::yield_now().await;
                    r[3]
                }) -> v => v,
            }
        })
    });
    assert_eq!(got, 7);
}

#[test]
fn a_join_handle_and_into_future_types_are_future_cases() {
    let got = within("a join handle raced against a channel", || {
        rt(2).block_on(async {
            let (_tx, rx) = chan::bounded::<u32>(0);
            let handle = goro::spawn(async { 40 + 2 });
            goro::select! {
                recv(rx) -> _ => 0,
                await(handle) -> r => r.unwrap(),
            }
        })
    });
    assert_eq!(got, 42);
}

#[test]
fn question_mark_and_break_work_in_future_case_bodies() {
    fn parse(s: &'static str) -> Result<u32, std::num::ParseIntError> {
        ready("`?` in a future case's body", async move {
            let (_tx, rx) = chan::bounded::<u32>(1);
            let n = goro::select! {
                recv(rx) -> _ => 0,
                await(async move { s }) -> s => s.parse::<u32>()?,
            };
            Ok(n + 1)
        })
    }
    assert_eq!(parse("41"), Ok(42));
    assert!(parse("x").is_err());

    let rounds = ready("`break` in a future case's body", async {
        let (_tx, rx) = chan::bounded::<u32>(1);
        let mut rounds = 0;
        loop {
            rounds += 1;
            goro::select! {
                recv(rx) -> _ => {}
                await(async { rounds }) -> r => if r == 3 { break rounds; },
            }
        }
    });
    assert_eq!(rounds, 3);
}

/// The future is dropped before the body runs, so a body may use what the
/// future borrowed mutably.
#[test]
fn a_body_may_use_what_the_future_borrowed() {
    let mut log = Vec::new();
    let (_tx, rx) = chan::bounded::<u32>(1);
    ready("a future borrowing `log` mutably", async {
        goro::select! {
            recv(rx) -> _ => {}
            await(async { log.push("future") }) -> () => log.push("body"),
        }
    });
    assert_eq!(log, ["future", "body"]);
}

#[test]
fn default_timeout_with_a_future_case() {
    let got = within("a future case with default(timeout)", || {
        rt(1).block_on(async {
            let (_tx, rx) = chan::bounded::<u32>(0);
            let slept = goro::select! {
                recv(rx) -> _ => "channel",
                await(goro::time::sleep(Duration::from_millis(1))) -> () => "future",
                default(Duration::from_secs(30)) => "timeout",
            };
            let timed_out = goro::select! {
                recv(rx) -> _ => "channel",
                await(std::future::pending::<()>()) -> () => "future",
                default(Duration::from_millis(1)) => "timeout",
            };
            (slept, timed_out)
        })
    });
    assert_eq!(got, ("future", "timeout"));
}

#[test]
fn select_blocking_takes_future_cases() {
    let (_tx, rx) = chan::bounded::<u32>(1);
    let got = within("select_blocking! with a ready future", move || {
        goro::select_blocking! {
            recv(rx) -> _ => 0,
            await(async { 8 }) -> v => v,
        }
    });
    assert_eq!(got, 8);
}

//! `goro::select!`: readiness, random choice, `default`, closed channels,
//! parking on several channels, same channel twice, select against select,
//! and the macro's syntax.

mod support;

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use goro::chan::{self, RecvError, SendError, TryRecvError};
use support::chan::*;

#[derive(Debug, PartialEq)]
enum Got<T> {
    A(T),
    B(T),
}

#[test]
fn select_completes_the_only_ready_recv_case() {
    let (_tx_a, rx_a) = chan::bounded::<u8>(1);
    let (tx_b, rx_b) = chan::bounded::<u8>(1);
    tx_b.try_send(2).unwrap();
    let got = ready("select with a ready recv case", async {
        goro::select! {
            recv(rx_a) -> m => Got::A(m),
            recv(rx_b) -> m => Got::B(m),
        }
    });
    assert_eq!(got, Got::B(Ok(2)));
}

#[test]
fn select_completes_the_only_ready_send_case() {
    let (tx_a, rx_a) = chan::bounded::<u8>(0);
    let (tx_b, rx_b) = chan::bounded::<u8>(1);
    let got = ready("select with a ready send case", async {
        goro::select! {
            send(tx_a, 1) -> r => Got::A(r),
            send(tx_b, 2) -> r => Got::B(r),
        }
    });
    assert_eq!(got, Got::B(Ok(())));
    assert_eq!(rx_b.try_recv(), Ok(2));
    assert_eq!(
        rx_a.try_recv(),
        Err(TryRecvError::Empty),
        "the losing case sent nothing"
    );
}

#[test]
fn select_with_default_never_blocks() {
    let (_tx, rx) = chan::bounded::<u8>(0);
    let (tx2, _rx2) = chan::bounded::<u8>(0);
    // `select_blocking!` with `default` is a plain expression: usable in
    // plain functions.
    let got = goro::select_blocking! {
        recv(rx) -> _ => "recv",
        send(tx2, 1) -> _ => "send",
        default => "default",
    };
    assert_eq!(got, "default");
    // `select!` with `default` awaits (a safe point), but never waits for a
    // channel: it completes on its first poll outside a task.
    let got = ready("select! with default", async {
        goro::select! {
            recv(rx) -> _ => "recv",
            send(tx2, 1) -> _ => "send",
            default => "default",
        }
    });
    assert_eq!(got, "default");
}

#[test]
fn select_default_not_taken_when_a_case_is_ready() {
    let (tx, rx) = chan::bounded::<u8>(1);
    tx.try_send(6).unwrap();
    let got = ready("select with default and a ready case", async {
        goro::select! {
            recv(rx) -> m => m.ok(),
            default => None,
        }
    });
    assert_eq!(got, Some(6));
}

#[test]
fn select_send_not_chosen_does_not_consume_its_value() {
    let drops = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = chan::bounded::<Tracked>(1);
    let (tx_ready, rx_ready) = chan::bounded::<u8>(1);
    let mut recv_wins = 0;
    for i in 0..200 {
        tx_ready.try_send(0).unwrap();
        let value = Tracked::new(i, &drops);
        let sent = ready("select with default, both cases ready", async {
            goro::select! {
                send(tx, value) -> r => { r.unwrap(); true }
                recv(rx_ready) -> m => { m.unwrap(); false }
                default => panic!("both cases were ready"),
            }
        });
        if sent {
            assert_eq!(
                rx.try_recv().map(|t| t.id).ok(),
                Some(i),
                "the chosen send delivered"
            );
            let _ = rx_ready.try_recv(); // reset for the next round
        } else {
            recv_wins += 1;
            assert_eq!(
                rx.len(),
                0,
                "round {i}: the losing send case put nothing in the channel"
            );
        }
    }
    assert!(
        recv_wins > 0,
        "the recv case won at least once in 200 rounds"
    );
    assert_eq!(
        drops.load(Ordering::SeqCst),
        200,
        "every value dropped exactly once"
    );
}

#[test]
fn select_is_fair_between_ready_channels() {
    const ROUNDS: u32 = 10_000;
    let (tx_a, rx_a) = chan::bounded::<u8>(1);
    let (tx_b, rx_b) = chan::bounded::<u8>(1);
    let mut a_wins = 0u32;
    ready("10,000 selects on always-ready channels", async {
        for _ in 0..ROUNDS {
            let _ = tx_a.try_send(0);
            let _ = tx_b.try_send(0);
            goro::select! {
                recv(rx_a) -> _ => a_wins += 1,
                recv(rx_b) -> _ => {}
            }
        }
    });
    let share = f64::from(a_wins) / f64::from(ROUNDS);
    assert!(
        (0.40..=0.60).contains(&share),
        "case a chosen {a_wins} of {ROUNDS} times ({share:.3}); expected 40%..60%"
    );
}

#[test]
fn select_parks_and_is_woken_by_any_channel() {
    for which in 0..2 {
        let (tx_a, rx_a) = chan::bounded::<u8>(0);
        let (tx_b, rx_b) = chan::bounded::<u8>(0);
        let (tx_c, rx_c) = chan::bounded::<u8>(1);
        tx_c.try_send(0).unwrap(); // full: its send case parks too
        let selector = std::thread::spawn(move || {
            futures::executor::block_on(async {
                goro::select! {
                    recv(rx_a) -> m => Got::A(m.unwrap()),
                    recv(rx_b) -> m => Got::B(m.unwrap()),
                    send(tx_c, 1) -> _ => panic!("channel c is never drained"),
                }
            })
        });
        let got = within("parked select woken by a sender", move || {
            if which == 0 {
                tx_a.send_blocking(10).unwrap();
            } else {
                tx_b.send_blocking(20).unwrap();
            }
            selector.join().unwrap()
        });
        assert_eq!(got, if which == 0 { Got::A(10) } else { Got::B(20) });
        assert_eq!(
            rx_c.len(),
            1,
            "the parked send case left channel c untouched"
        );
    }
}

#[test]
fn select_recv_on_closed_channel_is_ready_with_err() {
    let (tx, rx) = chan::bounded::<u8>(1);
    tx.try_send(1).unwrap();
    tx.close();
    let first = goro::select_blocking! { recv(rx) -> m => m, default => panic!("closed is ready") };
    let second = ready("select! on a closed channel", async {
        goro::select! { recv(rx) -> m => m, default => panic!("closed is ready") }
    });
    assert_eq!(
        (first, second),
        (Ok(1), Err(RecvError)),
        "drains, then reports closed"
    );
}

#[test]
fn select_send_on_closed_channel_returns_value() {
    let (tx, _rx) = chan::bounded::<String>(0);
    tx.close();
    let got = ready("select send on a closed channel", async {
        goro::select! { send(tx, "back".to_string()) -> r => r }
    });
    assert_eq!(got.map_err(SendError::into_inner), Err("back".to_string()));
}

#[test]
fn parked_select_is_woken_by_close() {
    let (tx_a, rx_a) = chan::bounded::<u8>(0);
    let (tx_b, rx_b) = chan::bounded::<u8>(0);
    let (ready_tx, ready_rx) = chan::bounded::<()>(1);
    let got = within("parked select woken by close", move || {
        let selector = std::thread::spawn(move || {
            futures::executor::block_on(async {
                let _ = ready_tx.try_send(());
                goro::select! {
                    recv(rx_a) -> m => m,
                    send(tx_b, 1) -> _ => panic!("nobody receives on b"),
                }
            })
        });
        ready_rx.recv_blocking().unwrap();
        // Whether or not the selector has parked yet, closing `a` completes it.
        tx_a.close();
        let got = selector.join().unwrap();
        drop(rx_b);
        got
    });
    assert_eq!(got, Err(RecvError), "the recv case completes with Closed");
}

#[test]
fn select_with_the_same_receiver_twice() {
    let (tx, rx) = chan::bounded::<u8>(0);
    let selector = std::thread::spawn(move || {
        futures::executor::block_on(async {
            goro::select! {
                recv(rx) -> m => Got::A(m.unwrap()),
                recv(rx) -> m => Got::B(m.unwrap()),
            }
        })
    });
    let got = within("select parked twice on one channel", move || {
        tx.send_blocking(3).unwrap();
        // The second waiter must be gone: nobody takes this one.
        assert_eq!(tx.try_send(4), Err(chan::TrySendError::Full(4)));
        selector.join().unwrap()
    });
    assert!(
        got == Got::A(3) || got == Got::B(3),
        "exactly one case got the value: {got:?}"
    );
}

#[test]
fn select_send_and_recv_on_one_rendezvous_channel_does_not_match_itself() {
    let (tx, rx) = chan::bounded::<u8>(0);
    let got = goro::select_blocking! {
        send(tx, 1) -> _ => "send",
        recv(rx) -> _ => "recv",
        default => "default",
    };
    assert_eq!(got, "default", "a select cannot be its own counterpart");

    let (tx2, rx2) = (tx.clone(), rx.clone());
    let _keep_open = tx.clone();
    let selector = std::thread::spawn(move || {
        futures::executor::block_on(async {
            goro::select! {
                send(tx2, 1) -> r => Got::A(r.is_ok()),
                recv(rx2) -> m => Got::B(m.is_ok()),
            }
        })
    });
    let got = within("select with send and recv on one channel", move || {
        // Someone else sends: only the recv case can take it.
        tx.send_blocking(9).unwrap();
        selector.join().unwrap()
    });
    assert_eq!(got, Got::B(true));
    assert_eq!(
        rx.try_recv(),
        Err(TryRecvError::Empty),
        "the send case's waiter is gone"
    );
}

#[test]
fn select_in_a_loop_until_all_channels_close() {
    let (tx_a, rx_a) = chan::bounded::<u32>(0);
    let (tx_b, rx_b) = chan::bounded::<u32>(2);
    let got = within("select loop over two producers", move || {
        let pa = std::thread::spawn(move || (0..300).for_each(|i| tx_a.send_blocking(i).unwrap()));
        let pb =
            std::thread::spawn(move || (1000..1300).for_each(|i| tx_b.send_blocking(i).unwrap()));
        let got = futures::executor::block_on(async {
            let mut got = Vec::new();
            let (mut a_open, mut b_open) = (true, true);
            while a_open || b_open {
                goro::select! {
                    recv(rx_a) -> m => match m {
                        Ok(v) => got.push(v),
                        Err(_) => { a_open = false; if !b_open { break; } }
                    },
                    recv(rx_b) -> m => match m {
                        Ok(v) => got.push(v),
                        Err(_) => b_open = false,
                    },
                }
            }
            got
        });
        pa.join().unwrap();
        pb.join().unwrap();
        got
    });
    assert_eq!(got.len(), 600, "every value received");
    assert_eq!(got.iter().collect::<HashSet<_>>().len(), 600, "none twice");
    let a: Vec<_> = got.iter().copied().filter(|&v| v < 1000).collect();
    assert_eq!(a, (0..300).collect::<Vec<_>>(), "per-channel order kept");
}

#[test]
fn select_sends_reach_exactly_one_receiver() {
    // One selector offers each value to two rendezvous channels; each value
    // must be delivered on exactly one of them.
    const N: u32 = 500;
    let (tx_a, rx_a) = chan::bounded::<u32>(0);
    let (tx_b, rx_b) = chan::bounded::<u32>(0);
    let (a, b) = within("select sending to two receivers", move || {
        let ca = std::thread::spawn(move || {
            std::iter::from_fn(|| rx_a.recv_blocking().ok()).collect::<Vec<_>>()
        });
        let cb = std::thread::spawn(move || {
            std::iter::from_fn(|| rx_b.recv_blocking().ok()).collect::<Vec<_>>()
        });
        futures::executor::block_on(async {
            for i in 0..N {
                goro::select! {
                    send(tx_a, i) -> r => r.unwrap(),
                    send(tx_b, i) -> r => r.unwrap(),
                }
            }
        });
        drop((tx_a, tx_b));
        (ca.join().unwrap(), cb.join().unwrap())
    });
    let mut all: Vec<_> = a.iter().chain(&b).copied().collect();
    all.sort_unstable();
    assert_eq!(
        all,
        (0..N).collect::<Vec<_>>(),
        "each value delivered exactly once"
    );
}

#[test]
fn select_against_select_on_rendezvous_channels() {
    // Both sides are selects, so hand-offs go select-to-select and the
    // abort-and-retry path of registration is exercised.
    const N: u32 = 500;
    let (tx, rx) = chan::bounded::<u32>(0);
    let (tx_never, rx_never) = chan::bounded::<u32>(0);
    let (stop_tx, stop_rx) = chan::bounded::<()>(0);
    let got = within("select sender vs select receiver", move || {
        let consumer = std::thread::spawn(move || {
            futures::executor::block_on(async {
                let mut got = Vec::new();
                loop {
                    goro::select! {
                        recv(rx) -> m => got.push(m.unwrap()),
                        recv(stop_rx) -> _ => break,
                    }
                }
                got
            })
        });
        futures::executor::block_on(async {
            for i in 0..N {
                goro::select! {
                    send(tx, i) -> r => r.unwrap(),
                    recv(rx_never) -> _ => unreachable!("nobody sends on rx_never"),
                }
            }
        });
        stop_tx.close();
        drop(tx_never);
        consumer.join().unwrap()
    });
    assert_eq!(got, (0..N).collect::<Vec<_>>());
}

#[test]
fn select_accepts_references_temporaries_and_both_body_forms() {
    let (tx, rx) = chan::bounded::<u8>(4);
    let pair = (tx.clone(), rx.clone());
    let make = || rx.clone();
    ready("selects whose cases are all ready", async {
        goro::select! { send(&tx, 1) -> r => r.unwrap() }
        goro::select! { send(pair.0, 2) -> r => { r.unwrap(); } }
        let a = goro::select! { recv(&rx) -> m => m.unwrap() };
        let b = goro::select! { recv(make()) -> m => m.unwrap(), };
        let c = goro::select! {
            recv(pair.1) -> _ => 1,
            default => 0,
        };
        assert_eq!((a, b, c), (1, 2, 0));
    });
}

#[test]
fn select_future_is_send() {
    fn check<F: std::future::Future + Send>(_: F) {}
    let (tx, rx) = chan::bounded::<String>(1);
    check(async move {
        goro::select! {
            recv(rx) -> m => m.is_ok(),
            send(tx, String::new()) -> r => r.is_ok(),
        }
    });
}

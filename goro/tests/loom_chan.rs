//! Loom models of the channel's lock + signal protocol: hand-off, close,
//! cancellation and select, at cap 0 and cap 1, with two threads.
//!
//! Run with:
//! `RUSTFLAGS="--cfg loom" cargo test -p goro --test loom_chan --release`
//!
//! Run as above, without `LOOM_MAX_PREEMPTIONS` (as `.ci/run` runs this
//! file), the plain send/recv/close/cancel models (`loom::model`) are
//! explored with no preemption bound (every interleaving loom
//! distinguishes), and the select models (`model_bounded`) with at most 5
//! preemptions per execution (4 for the re-polled select). The whole file
//! took 0.13 s so on 2026-11-25. `LOOM_MAX_PREEMPTIONS=N` overrides every
//! one of these bounds.
//!
//! Each model was checked to fail on a planted bug
//! (a dropped put-back on cancellation; a registration pass blind to a
//! parked counterpart).
//!
//! The last two models are the non-blocking `select!` (`try_select.rs`):
//! one consistent moment across its channels (Go's
//! `TestNonblockSelectRace`; fails on a planted lock-try-unlock per case),
//! and two selects naming the same channels in opposite orders (fails with
//! a deadlock when the locks are not taken in address order). The very
//! last is `Select::cancel`, the give-up of `default(timeout)` (fails when
//! it drops the result of a case claimed just before).
//!
//! A waiter's slot and waker are loom `UnsafeCell`s, so every model also
//! checks that each access to them is ordered by the protocol. The last
//! four models target that directly: an owner that spins instead of
//! sleeping on its waker (only `DONE`'s Release/Acquire orders its read of
//! the slot), and parked send/recv/select re-polled with a new waker (the
//! waker swap under the channel lock; the select's abort-and-retry). They
//! fail on a planted `Relaxed` `DONE` store and on a waker swap without the
//! lock.
#![cfg(loom)]

mod support;

use goro::chan::{self, RecvError, SendError, TryRecvError, TrySendError};
use loom::thread;
use std::future::Future;
use std::task::{Context, Poll};
use support::loom_exec::{block_on, model_bounded};

fn poll_once<F: Future + Unpin>(fut: &mut F) -> Poll<F::Output> {
    let mut cx = Context::from_waker(futures::task::noop_waker_ref());
    std::pin::Pin::new(fut).poll(&mut cx)
}

#[test]
fn rendezvous_send_meets_recv() {
    loom::model(|| {
        let (tx, rx) = chan::bounded::<u8>(0);
        let t = thread::spawn(move || block_on(tx.send(1)));
        assert_eq!(block_on(rx.recv()), Ok(1));
        assert_eq!(t.join().unwrap(), Ok(()));
    });
}

#[test]
fn cap1_keeps_order_through_a_full_buffer() {
    loom::model(|| {
        let (tx, rx) = chan::bounded::<u8>(1);
        let t = thread::spawn(move || {
            block_on(tx.send(1)).unwrap();
            block_on(tx.send(2)).unwrap();
        });
        assert_eq!(block_on(rx.recv()), Ok(1));
        assert_eq!(block_on(rx.recv()), Ok(2));
        t.join().unwrap();
        assert_eq!(
            block_on(rx.recv()),
            Err(RecvError),
            "closed by the last sender's drop"
        );
    });
}

#[test]
fn close_wakes_a_parked_receiver() {
    for cap in [0, 1] {
        loom::model(move || {
            let (tx, rx) = chan::bounded::<u8>(cap);
            let t = thread::spawn(move || block_on(rx.recv()));
            tx.close();
            assert_eq!(t.join().unwrap(), Err(RecvError));
        });
    }
}

#[test]
fn close_gives_a_parked_sender_its_value() {
    for cap in [0, 1] {
        loom::model(move || {
            let (tx, rx) = chan::bounded::<u8>(cap);
            if cap == 1 {
                tx.try_send(0).unwrap();
            }
            let tx2 = tx.clone();
            let t = thread::spawn(move || block_on(tx2.send(5)));
            tx.close();
            assert_eq!(t.join().unwrap(), Err(SendError(5)));
            if cap == 1 {
                assert_eq!(rx.try_recv(), Ok(0), "the buffered value survives close");
            }
            assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
        });
    }
}

#[test]
fn cancelled_recv_loses_no_value() {
    for cap in [0, 1] {
        loom::model(move || {
            let (tx, rx) = chan::bounded::<u8>(cap);
            let mut recv = rx.recv();
            let first = poll_once(&mut recv);
            assert!(first.is_pending(), "nothing sent yet");
            let t = thread::spawn(move || {
                let r = tx.try_send(7);
                (r, tx)
            });
            drop(recv); // races the hand-off
            let (sent, _tx) = t.join().unwrap();
            match sent {
                Ok(()) => assert_eq!(rx.try_recv(), Ok(7), "a sent value stays receivable"),
                Err(TrySendError::Full(7)) => {
                    assert_eq!(cap, 0, "cap 1 always has room");
                    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
                }
                Err(e) => panic!("unexpected {e:?}"),
            }
            assert_eq!(rx.try_recv(), Err(TryRecvError::Empty), "and nothing else");
        });
    }
}

#[test]
fn cancelled_send_leaves_nothing_behind() {
    for cap in [0, 1] {
        loom::model(move || {
            let (tx, rx) = chan::bounded::<u8>(cap);
            if cap == 1 {
                tx.try_send(1).unwrap();
            }
            let mut send = tx.send(7);
            assert!(poll_once(&mut send).is_pending(), "no receiver, no room");
            let t = thread::spawn(move || {
                let first = rx.try_recv();
                (first, rx)
            });
            drop(send); // races the receiver taking the value
            let (first, rx) = t.join().unwrap();
            let mut got: Vec<u8> = first.into_iter().collect();
            got.extend(std::iter::from_fn(|| rx.try_recv().ok()));
            // The cancelled 7 was either taken before the drop (and then
            // delivered once) or never entered the channel.
            let want: &[&[u8]] = if cap == 0 {
                &[&[], &[7]]
            } else {
                &[&[1], &[1, 7]]
            };
            assert!(want.contains(&got.as_slice()), "cap {cap}: got {got:?}");
            drop(tx);
        });
    }
}

#[test]
fn select_completes_exactly_one_case() {
    model_bounded(5, || {
        let (tx_a, rx_a) = chan::bounded::<u8>(0);
        let (tx_b, rx_b) = chan::bounded::<u8>(0);
        let t = thread::spawn(move || {
            let b = tx_b.try_send(2);
            block_on(tx_a.send(1)).unwrap();
            b
        });
        let first = block_on(async {
            goro::select! {
                recv(rx_a) -> m => ('a', m.unwrap()),
                recv(rx_b) -> m => ('b', m.unwrap()),
            }
        });
        let b_sent = match first {
            ('b', 2) => {
                assert_eq!(block_on(rx_a.recv()), Ok(1));
                true
            }
            ('a', 1) => false,
            other => panic!("unexpected {other:?}"),
        };
        let b = t.join().unwrap();
        assert_eq!(
            b.is_ok(),
            b_sent,
            "b's value was delivered iff try_send succeeded"
        );
        assert_eq!(
            rx_b.try_recv(),
            Err(TryRecvError::Closed),
            "no stale waiter took anything"
        );
    });
}

#[test]
fn select_send_meets_select_recv() {
    loom::model(|| {
        let (tx, rx) = chan::bounded::<u8>(0);
        let (tx_idle, rx_idle) = chan::bounded::<u8>(0);
        let t = thread::spawn(move || {
            block_on(async {
                goro::select! {
                    send(tx, 3) -> r => r.unwrap(),
                    recv(rx_idle) -> _ => unreachable!("nobody sends on idle"),
                }
            })
        });
        let got = block_on(async {
            goro::select! {
                recv(rx) -> m => m.unwrap(),
            }
        });
        assert_eq!(got, 3);
        t.join().unwrap();
        drop(tx_idle);
    });
}

#[test]
fn close_completes_a_parked_select_send_with_its_value() {
    model_bounded(5, || {
        let (tx, rx) = chan::bounded::<u8>(0);
        let (_tx_idle, rx_idle) = chan::bounded::<u8>(0);
        let tx2 = tx.clone();
        let t = thread::spawn(move || {
            block_on(async {
                goro::select! {
                    send(tx2, 5) -> r => r,
                    recv(rx_idle) -> _ => unreachable!("nobody sends on idle"),
                }
            })
        });
        tx.close();
        assert_eq!(t.join().unwrap(), Err(SendError(5)), "the value comes back");
        assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
    });
}

#[test]
fn cancelled_select_loses_no_value() {
    model_bounded(5, || {
        let (tx_a, rx_a) = chan::bounded::<u8>(0);
        let (_tx_b, rx_b) = chan::bounded::<u8>(0);
        let mut sel = Box::pin(async {
            goro::select! {
                recv(rx_a) -> m => m,
                recv(rx_b) -> m => m,
            }
        });
        assert!(poll_once(&mut sel).is_pending(), "nothing sent yet");
        let t = thread::spawn(move || {
            let r = tx_a.try_send(7);
            (r, tx_a)
        });
        drop(sel); // races the hand-off
        let (sent, _tx_a) = t.join().unwrap();
        match sent {
            Ok(()) => assert_eq!(rx_a.try_recv(), Ok(7), "a sent value stays receivable"),
            Err(TrySendError::Full(7)) => assert_eq!(rx_a.try_recv(), Err(TryRecvError::Empty)),
            Err(e) => panic!("unexpected {e:?}"),
        }
        assert_eq!(
            rx_b.try_recv(),
            Err(TryRecvError::Empty),
            "no waiter left behind on b"
        );
    });
}

/// Polls `fut` until it is ready without ever sleeping on a waker (a noop
/// waker, yielding between polls): the owner then learns of its completion
/// only through the signal's Release/Acquire pair, not through a waker's
/// lock, so a missing `Release` on `DONE` is a data race on the slot.
fn spin_on<F: Future + Unpin>(fut: &mut F) -> F::Output {
    loop {
        if let Poll::Ready(v) = poll_once(fut) {
            return v;
        }
        thread::yield_now();
    }
}

#[test]
fn a_spinning_owner_reads_the_slot_after_done() {
    for cap in [0, 1] {
        loom::model(move || {
            let (tx, rx) = chan::bounded::<u8>(cap);
            if cap == 1 {
                tx.try_send(1).unwrap();
            }
            let tx2 = tx.clone();
            // A parked sender (cap 1: behind the buffered 1) and a parked
            // receiver's counterpart, both completed by the other thread.
            let t = thread::spawn(move || {
                let mut send = tx2.send(2);
                spin_on(&mut send)
            });
            let mut got = Vec::new();
            while got.len() < cap + 1 {
                let mut recv = rx.recv();
                got.push(spin_on(&mut recv).unwrap());
            }
            assert_eq!(t.join().unwrap(), Ok(()));
            let want: &[u8] = if cap == 0 { &[2] } else { &[1, 2] };
            assert_eq!(got, want);
            drop(tx);
        });
    }
}

#[test]
fn a_parked_recv_polled_with_a_new_waker_is_woken_through_it() {
    loom::model(|| {
        let (tx, rx) = chan::bounded::<u8>(0);
        let mut recv = rx.recv();
        // Parked with a waker nobody listens to (the future then "moves to
        // another task"): the send must wake the waker of the later poll.
        assert!(poll_once(&mut recv).is_pending());
        let t = thread::spawn(move || block_on(tx.send(4)));
        assert_eq!(block_on(recv), Ok(4));
        assert_eq!(t.join().unwrap(), Ok(()));
    });
}

#[test]
fn a_parked_send_polled_with_a_new_waker_is_woken_through_it() {
    loom::model(|| {
        let (tx, rx) = chan::bounded::<u8>(0);
        let mut send = tx.send(6);
        assert!(poll_once(&mut send).is_pending());
        let t = thread::spawn(move || block_on(rx.recv()));
        assert_eq!(block_on(send), Ok(()));
        assert_eq!(t.join().unwrap(), Ok(6));
    });
}

#[test]
fn a_parked_select_polled_with_a_new_waker_is_woken_through_it() {
    model_bounded(4, || {
        let (tx_a, rx_a) = chan::bounded::<u8>(0);
        let (_tx_b, rx_b) = chan::bounded::<u8>(0);
        let mut sel = Box::pin(async {
            goro::select! {
                recv(rx_a) -> m => m,
                recv(rx_b) -> m => m,
            }
        });
        assert!(poll_once(&mut sel).is_pending(), "nothing sent yet");
        let t = thread::spawn(move || block_on(tx_a.send(8)));
        assert_eq!(block_on(sel), Ok(8));
        assert_eq!(t.join().unwrap(), Ok(()));
        assert_eq!(
            rx_b.try_recv(),
            Err(TryRecvError::Empty),
            "no waiter left on b"
        );
    });
}

/// Go's `TestNonblockSelectRace` as a model: `c1` holds a value and the
/// other thread fills `c2` before draining `c1`, so one of them is ready at
/// every moment and a `select!` with `default` must take a channel case.
/// The cases are in the order (`c2`, `c1`) that loom's fixed poll order
/// visits first to last: a select that looks at one channel at a time can
/// see `c2` empty before the send and `c1` empty after the receive (the
/// planted bug: lock, try and unlock each case in turn).
#[test]
fn nonblocking_select_sees_one_moment() {
    loom::model(|| {
        let (t1, c1) = chan::bounded::<u8>(1);
        let (t2, c2) = chan::bounded::<u8>(1);
        t1.try_send(1).unwrap();
        let (c1b, c2b) = (c1.clone(), c2.clone());
        let t = thread::spawn(move || {
            goro::select_blocking! {
                recv(c2b) -> _ => true,
                recv(c1b) -> _ => true,
                default => false,
            }
        });
        t2.try_send(2).unwrap();
        let _ = c1.try_recv();
        assert!(
            t.join().unwrap(),
            "default taken although c1 or c2 held a value at every moment"
        );
        drop(t1);
    });
}

/// Two non-blocking selects over the same two channels, named in opposite
/// orders, one of them sending: each takes both locks, so a lock order that
/// followed the cases would deadlock (the planted bug: no sort by address).
/// Whatever each takes, no value is lost or made up.
#[test]
fn nonblocking_selects_in_opposite_orders_do_not_deadlock() {
    loom::model(|| {
        let (ta, a) = chan::bounded::<u8>(1);
        let (tb, b) = chan::bounded::<u8>(1);
        ta.try_send(1).unwrap();
        let (a2, tb2) = (a.clone(), tb.clone());
        let t = thread::spawn(move || {
            goro::select_blocking! {
                recv(a2) -> v => v.unwrap(),
                send(tb2, 2) -> r => { r.unwrap(); 0 }
                default => 9,
            }
        });
        let mine = goro::select_blocking! {
            send(tb, 3) -> r => { r.unwrap(); 0 }
            recv(a) -> v => v.unwrap(),
            default => 9,
        };
        let theirs = t.join().unwrap();
        // `a`'s value went to at most one select, and `b` holds what was sent.
        let took_a = [mine, theirs].iter().filter(|&&v| v == 1).count();
        assert!(took_a <= 1, "a's one value was received twice");
        let sent_b = [mine, theirs].iter().filter(|&&v| v == 0).count();
        assert_eq!(b.len(), sent_b, "b holds exactly the values sent to it");
        assert_eq!(a.len() + took_a, 1, "a's value is received or still there");
        drop(ta);
    });
}

/// `select!`'s `default(timeout)` gives up by `Select::cancel`: a send
/// case that a receiver claimed just before must count as sent (its result
/// in the case), and one that nobody claimed must not be delivered. The
/// receiver's view and the select's must agree in every interleaving
/// (fails if `cancel` drops the claimed case's result).
#[test]
fn a_cancelled_select_keeps_a_send_claimed_meanwhile() {
    use goro::chan::select::{Case, Select, SendCase};
    loom::model(|| {
        let (tx, rx) = chan::bounded::<u8>(0);
        let t = thread::spawn(move || rx.try_recv().ok());
        let mut case = SendCase::new(&tx, 7);
        {
            let mut select = Select::new([&mut case as &mut dyn Case]);
            let _ = poll_once(&mut select); // completes, or parks
            select.cancel();
        }
        let sent = case.into_result().is_some();
        let received = t.join().unwrap();
        assert_eq!(
            received.is_some(),
            sent,
            "the receiver and the select disagree"
        );
    });
}

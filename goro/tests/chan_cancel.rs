//! Cancellation: a send, recv, stream poll or select dropped before it
//! completes leaves the channel as if it had never been called, and no
//! value is ever lost or duplicated.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::Poll;

use futures::Stream;
use goro::chan::{self, TryRecvError, TrySendError};
use support::chan::*;

#[test]
fn dropped_recv_future_leaves_no_waiter() {
    let (tx, rx) = chan::bounded::<u8>(0);
    let mut recv = rx.recv();
    assert!(poll_once(&mut recv).is_pending(), "parked as a waiter");
    drop(recv);
    assert_eq!(
        tx.try_send(1),
        Err(TrySendError::Full(1)),
        "no receiver left to hand the value to"
    );
}

#[test]
fn dropped_send_future_leaves_no_value_at_cap_0() {
    let (tx, rx) = chan::bounded::<u8>(0);
    let mut send = tx.send(1);
    assert!(poll_once(&mut send).is_pending(), "parked as a waiter");
    drop(send);
    assert_eq!(
        rx.try_recv(),
        Err(TryRecvError::Empty),
        "the cancelled value is not received"
    );
    assert_eq!(rx.len(), 0);
}

#[test]
fn dropped_send_future_leaves_no_value_on_full_buffer() {
    let (tx, rx) = chan::bounded::<u8>(1);
    tx.try_send(1).unwrap();
    let mut send = tx.send(2);
    assert!(poll_once(&mut send).is_pending());
    drop(send);
    assert_eq!(rx.try_recv(), Ok(1));
    assert_eq!(
        rx.try_recv(),
        Err(TryRecvError::Empty),
        "value 2 was never sent"
    );
}

#[test]
fn dropped_send_future_drops_its_value_once() {
    let drops = Arc::new(AtomicUsize::new(0));
    let (tx, _rx) = chan::bounded::<Tracked>(0);
    let mut send = tx.send(Tracked::new(1, &drops));
    assert!(poll_once(&mut send).is_pending());
    drop(send);
    assert_eq!(
        drops.load(Ordering::SeqCst),
        1,
        "the unsent value is dropped exactly once"
    );
}

#[test]
fn value_handed_to_dropped_receiver_is_not_lost() {
    let (tx, rx) = chan::bounded::<u8>(0);
    let mut recv = rx.recv();
    assert!(poll_once(&mut recv).is_pending());
    assert_eq!(tx.try_send(5), Ok(()), "handed to the parked receiver");
    drop(recv); // before it ever saw the value
    assert_eq!(
        rx.len(),
        1,
        "the value went back into the channel (past cap 0)"
    );
    assert_eq!(rx.try_recv(), Ok(5), "and the next receiver gets it");
}

#[test]
fn value_handed_to_dropped_receiver_goes_to_next_parked_receiver() {
    let (tx, rx) = chan::bounded::<u8>(0);
    let (wakes, waker) = counting_waker();
    let mut first = rx.recv();
    let mut second = rx.recv();
    assert!(poll_once(&mut first).is_pending());
    assert!(poll_with(&mut second, &waker).is_pending());
    tx.try_send(7).unwrap();
    drop(first);
    assert_eq!(
        wakes.wakes.load(Ordering::SeqCst),
        1,
        "the second receiver is woken"
    );
    assert_eq!(poll_with(&mut second, &waker), Poll::Ready(Ok(7)));
    assert_eq!(rx.len(), 0);
}

#[test]
fn value_handed_to_dropped_receiver_stays_ahead_of_later_values() {
    let (tx, rx) = chan::bounded::<u8>(1);
    let mut recv = rx.recv();
    assert!(poll_once(&mut recv).is_pending());
    tx.try_send(1).unwrap(); // handed to `recv`
    tx.try_send(2).unwrap(); // buffered
    drop(recv);
    assert_eq!(rx.try_recv(), Ok(1), "the earlier value comes first");
    assert_eq!(rx.try_recv(), Ok(2));
}

#[test]
fn value_handed_to_dropped_receiver_survives_close() {
    let (tx, rx) = chan::bounded::<u8>(0);
    let mut recv = rx.recv();
    assert!(poll_once(&mut recv).is_pending());
    tx.try_send(3).unwrap();
    tx.close();
    drop(recv);
    assert_eq!(rx.try_recv(), Ok(3), "buffered values drain before Closed");
    assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
}

#[test]
fn dropped_stream_receiver_returns_pending_value() {
    let (tx, rx) = chan::bounded::<u8>(0);
    let mut streaming = rx.clone();
    let mut cx = std::task::Context::from_waker(futures::task::noop_waker_ref());
    assert!(std::pin::Pin::new(&mut streaming)
        .poll_next(&mut cx)
        .is_pending());
    tx.try_send(4).unwrap();
    drop(streaming);
    assert_eq!(
        rx.try_recv(),
        Ok(4),
        "the value handed to the dropped stream is kept"
    );
}

#[test]
fn dropped_select_leaves_no_waiters() {
    let (tx_a, rx_a) = chan::bounded::<u8>(0);
    let (tx_b, rx_b) = chan::bounded::<u8>(0);
    let (tx_c, rx_c) = chan::bounded::<u8>(1);
    tx_c.try_send(10).unwrap(); // full: the send case parks
    let mut sel = Box::pin(async {
        goro::select! {
            recv(rx_a) -> m => m.map(|_| "a"),
            recv(rx_b) -> m => m.map(|_| "b"),
            send(tx_c, 11) -> r => r.map(|_| "c").map_err(|_| goro::chan::RecvError),
        }
    });
    assert!(
        poll_once(&mut sel).is_pending(),
        "no case ready: parked on all three"
    );
    drop(sel);
    assert_eq!(
        tx_a.try_send(1),
        Err(TrySendError::Full(1)),
        "no waiter left on a"
    );
    assert_eq!(
        tx_b.try_send(2),
        Err(TrySendError::Full(2)),
        "no waiter left on b"
    );
    assert_eq!(rx_c.try_recv(), Ok(10));
    assert_eq!(
        rx_c.try_recv(),
        Err(TryRecvError::Empty),
        "the send case's value was not sent"
    );
}

#[test]
fn dropped_select_that_was_completed_returns_the_value() {
    let (tx_a, rx_a) = chan::bounded::<u8>(0);
    let (_tx_b, rx_b) = chan::bounded::<u8>(0);
    let mut sel = Box::pin(async {
        goro::select! {
            recv(rx_a) -> m => m,
            recv(rx_b) -> m => m,
        }
    });
    assert!(poll_once(&mut sel).is_pending());
    assert_eq!(tx_a.try_send(8), Ok(()), "handed to the parked select");
    drop(sel); // completed but never polled again
    assert_eq!(rx_a.try_recv(), Ok(8), "the value is back in channel a");
}

#[test]
fn dropped_select_send_case_that_was_taken_stays_delivered() {
    let drops = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = chan::bounded::<Tracked>(0);
    let (_tx2, rx2) = chan::bounded::<u8>(0);
    let value = Tracked::new(1, &drops);
    let mut sel = Box::pin(async {
        goro::select! {
            send(tx, value) -> r => r.is_ok(),
            recv(rx2) -> _ => false,
        }
    });
    assert!(poll_once(&mut sel).is_pending());
    let got = rx
        .try_recv()
        .expect("the receiver takes the select's value");
    drop(sel);
    assert_eq!(got.id, 1);
    assert_eq!(drops.load(Ordering::SeqCst), 0, "delivered, not dropped");
    drop(got);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn cancelling_receives_racing_a_sender_loses_nothing() {
    // A sender thread pushes 0..N through a rendezvous channel; the receiver
    // polls a fresh recv future once and drops it whenever it is pending,
    // so hand-offs keep racing cancellations. Every value must arrive, in
    // order, exactly once.
    const N: u32 = 2000;
    let (tx, rx) = chan::bounded::<u32>(0);
    let got = within(
        "receiver that cancels while a sender hands off",
        move || {
            let sender = std::thread::spawn(move || {
                for i in 0..N {
                    tx.send_blocking(i).unwrap();
                }
            });
            let mut got = Vec::with_capacity(N as usize);
            loop {
                let mut recv = rx.recv();
                match poll_once(&mut recv) {
                    Poll::Ready(Ok(v)) => got.push(v),
                    Poll::Ready(Err(_)) => break,
                    Poll::Pending => {
                        drop(recv);
                        std::thread::yield_now();
                    }
                }
            }
            sender.join().unwrap();
            got
        },
    );
    assert_eq!(got, (0..N).collect::<Vec<_>>());
}

#[test]
fn cancelling_sends_racing_a_receiver_keeps_only_taken_values() {
    // The mirror image: each attempt sends a fresh number and is dropped if
    // pending. A dropped send may still have been taken just before the
    // drop (then it was delivered); one that was not taken must leave
    // nothing behind. So: every completed send is received, nothing is
    // received twice, and order is kept.
    const N: usize = 2000;
    let (tx, rx) = chan::bounded::<u32>(0);
    let (completed, got) = within("sender that cancels while a receiver takes", move || {
        let receiver = std::thread::spawn(move || {
            std::iter::from_fn(|| rx.recv_blocking().ok()).collect::<Vec<_>>()
        });
        let mut completed = Vec::with_capacity(N);
        let mut attempt = 0u32;
        while completed.len() < N {
            let mut send = tx.send(attempt);
            match poll_once(&mut send) {
                Poll::Ready(r) => {
                    r.unwrap();
                    completed.push(attempt);
                }
                Poll::Pending => {
                    drop(send);
                    std::thread::yield_now();
                }
            }
            attempt += 1;
        }
        drop(tx);
        (completed, receiver.join().unwrap())
    });
    assert!(
        got.windows(2).all(|w| w[0] < w[1]),
        "received in order, no duplicates"
    );
    let received: std::collections::HashSet<_> = got.iter().copied().collect();
    let missing: Vec<_> = completed.iter().filter(|v| !received.contains(v)).collect();
    assert!(
        missing.is_empty(),
        "completed sends never received: {missing:?}"
    );
}

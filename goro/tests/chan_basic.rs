//! Channel operations one by one: buffering, rendezvous, close, auto-close,
//! hand-off, blocking calls, the `Stream` impl and the error types.

mod support;

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::task::Poll;

use futures::StreamExt;
use goro::chan::{self, RecvError, SendError, TryRecvError, TrySendError};
use support::chan::*;

#[test]
fn ends_are_send_sync_clone() {
    fn check<T: Send + Sync + Clone>() {}
    check::<chan::Sender<String>>();
    check::<chan::Receiver<String>>();
    fn check_future<F: std::future::Future + Send>(_: F) {}
    let (tx, rx) = chan::bounded::<String>(0);
    check_future(tx.send(String::new()));
    check_future(rx.recv());
}

#[test]
fn bounded_reports_capacity_and_len() {
    let (tx, rx) = chan::bounded::<u8>(3);
    assert_eq!((tx.capacity(), rx.capacity()), (3, 3));
    assert!(tx.is_empty() && rx.is_empty());
    tx.try_send(1).unwrap();
    tx.try_send(2).unwrap();
    assert_eq!((tx.len(), rx.len()), (2, 2), "two buffered values");
}

#[test]
fn try_send_fills_buffer_then_reports_full() {
    let (tx, rx) = chan::bounded::<u8>(2);
    assert_eq!(tx.try_send(1), Ok(()));
    assert_eq!(tx.try_send(2), Ok(()));
    assert_eq!(
        tx.try_send(3),
        Err(TrySendError::Full(3)),
        "third value exceeds cap 2"
    );
    assert_eq!(rx.len(), 2);
}

#[test]
fn try_recv_on_empty_open_channel_is_empty() {
    let (_tx, rx) = chan::bounded::<u8>(2);
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
}

#[test]
fn values_arrive_in_fifo_order() {
    let (tx, rx) = chan::bounded::<u32>(8);
    for i in 0..8 {
        tx.try_send(i).unwrap();
    }
    let got: Vec<u32> = (0..8).map(|_| rx.try_recv().unwrap()).collect();
    assert_eq!(got, (0..8).collect::<Vec<_>>());
}

#[test]
fn rendezvous_try_send_without_receiver_is_full() {
    let (tx, rx) = chan::bounded::<u8>(0);
    assert_eq!(tx.try_send(1), Err(TrySendError::Full(1)));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
}

#[test]
fn rendezvous_send_completes_only_when_received() {
    let (tx, rx) = chan::bounded::<u8>(0);
    let (wakes, waker) = counting_waker();
    let mut send = tx.send(5);
    assert!(
        poll_with(&mut send, &waker).is_pending(),
        "no receiver yet: the send must wait"
    );
    assert_eq!(tx.len(), 0, "a rendezvous channel buffers nothing");
    assert_eq!(
        rx.try_recv(),
        Ok(5),
        "the receiver takes the parked sender's value"
    );
    assert_eq!(
        wakes.wakes.load(Ordering::SeqCst),
        1,
        "the sender is woken once"
    );
    assert_eq!(poll_with(&mut send, &waker), Poll::Ready(Ok(())));
}

#[test]
fn parked_receiver_gets_value_handed_directly() {
    let (tx, rx) = chan::bounded::<u8>(4);
    let (wakes, waker) = counting_waker();
    let mut recv = rx.recv();
    assert!(poll_with(&mut recv, &waker).is_pending());
    tx.try_send(9).unwrap();
    assert_eq!(
        rx.len(),
        0,
        "the value went to the receiver, not the buffer"
    );
    assert_eq!(wakes.wakes.load(Ordering::SeqCst), 1);
    assert_eq!(poll_with(&mut recv, &waker), Poll::Ready(Ok(9)));
}

#[test]
fn recv_on_full_buffer_moves_parked_sender_value_into_tail() {
    let (tx, rx) = chan::bounded::<u8>(1);
    tx.try_send(1).unwrap();
    let (wakes, waker) = counting_waker();
    let mut send = tx.send(2);
    assert!(
        poll_with(&mut send, &waker).is_pending(),
        "buffer full: the send parks"
    );
    assert_eq!(rx.try_recv(), Ok(1), "the head comes first");
    assert_eq!(
        rx.len(),
        1,
        "the parked sender's value moved into the buffer"
    );
    assert_eq!(wakes.wakes.load(Ordering::SeqCst), 1);
    assert_eq!(poll_with(&mut send, &waker), Poll::Ready(Ok(())));
    assert_eq!(rx.try_recv(), Ok(2));
}

#[test]
fn send_on_closed_returns_value() {
    let (tx, _rx) = chan::bounded::<String>(1);
    assert!(tx.close());
    let err = ready("send on a closed channel", tx.send("kept".to_string())).unwrap_err();
    assert_eq!(err.into_inner(), "kept");
}

#[test]
fn try_send_on_closed_returns_value_even_with_room() {
    let (tx, _rx) = chan::bounded::<u8>(4);
    tx.close();
    assert_eq!(tx.try_send(3), Err(TrySendError::Closed(3)));
}

#[test]
fn buffered_values_drain_before_closed() {
    let (tx, rx) = chan::bounded::<u8>(3);
    tx.try_send(1).unwrap();
    tx.try_send(2).unwrap();
    tx.close();
    assert!(rx.is_closed());
    ready("draining a closed buffered channel", async {
        assert_eq!(rx.recv().await, Ok(1));
        assert_eq!(rx.recv().await, Ok(2));
        assert_eq!(rx.recv().await, Err(RecvError));
    });
    assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
}

#[test]
fn close_returns_false_when_already_closed() {
    let (tx, rx) = chan::bounded::<u8>(0);
    assert!(!tx.is_closed());
    assert!(tx.close());
    assert!(!tx.close());
    assert!(tx.is_closed() && rx.is_closed());
}

#[test]
fn last_sender_drop_closes_channel() {
    let (tx, rx) = chan::bounded::<u8>(1);
    let tx2 = tx.clone();
    tx.try_send(1).unwrap();
    drop(tx);
    assert!(!rx.is_closed(), "a clone is still alive");
    drop(tx2);
    assert!(rx.is_closed(), "the last sender closed the channel");
    assert_eq!(
        rx.try_recv(),
        Ok(1),
        "the buffered value survives the close"
    );
    assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
}

#[test]
fn last_sender_drop_wakes_parked_receiver() {
    let (tx, rx) = chan::bounded::<u8>(0);
    let got = block_on_within("receiver woken by the last sender's drop", async move {
        let recv = rx.recv();
        drop(tx);
        recv.await
    });
    assert_eq!(got, Err(RecvError));
}

#[test]
fn dropping_all_receivers_does_not_close() {
    let (tx, rx) = chan::bounded::<u8>(1);
    drop(rx);
    assert!(!tx.is_closed(), "Go semantics: only senders close");
    assert_eq!(tx.try_send(1), Ok(()));
    assert_eq!(
        tx.try_send(2),
        Err(TrySendError::Full(2)),
        "sends block (Full) once buffered"
    );
}

#[test]
fn close_wakes_parked_receivers() {
    let (tx, rx) = chan::bounded::<u8>(0);
    let rx2 = rx.clone();
    let (wakes, waker) = counting_waker();
    let mut r1 = rx.recv();
    let mut r2 = rx2.recv();
    assert!(poll_with(&mut r1, &waker).is_pending());
    assert!(poll_with(&mut r2, &waker).is_pending());
    tx.close();
    assert_eq!(
        wakes.wakes.load(Ordering::SeqCst),
        2,
        "both parked receivers woken"
    );
    assert_eq!(poll_with(&mut r1, &waker), Poll::Ready(Err(RecvError)));
    assert_eq!(poll_with(&mut r2, &waker), Poll::Ready(Err(RecvError)));
}

#[test]
fn close_gives_parked_senders_their_values_back() {
    let (tx, _rx) = chan::bounded::<String>(1);
    tx.try_send("buffered".into()).unwrap();
    let (wakes, waker) = counting_waker();
    let mut s1 = tx.send("a".into());
    let mut s2 = tx.send("b".into());
    assert!(poll_with(&mut s1, &waker).is_pending());
    assert!(poll_with(&mut s2, &waker).is_pending());
    tx.close();
    assert_eq!(
        wakes.wakes.load(Ordering::SeqCst),
        2,
        "both parked senders woken"
    );
    match (poll_with(&mut s1, &waker), poll_with(&mut s2, &waker)) {
        (Poll::Ready(Err(SendError(a))), Poll::Ready(Err(SendError(b)))) => {
            assert_eq!((a.as_str(), b.as_str()), ("a", "b"));
        }
        other => panic!("expected both sends to fail with their values, got {other:?}"),
    }
}

#[test]
fn close_wakes_blocked_threads_on_both_sides() {
    let (tx, rx) = chan::bounded::<u8>(0);
    let recv = std::thread::spawn(move || rx.recv_blocking());
    let (ftx, frx) = chan::bounded::<u8>(1);
    ftx.try_send(0).unwrap();
    let ftx2 = ftx.clone();
    let send = std::thread::spawn(move || ftx2.send_blocking(1));
    // Whether the threads have parked yet or not, both must return.
    tx.close();
    ftx.close();
    let (r, s) = within(
        "blocked receiver and sender return after close",
        move || (recv.join().unwrap(), send.join().unwrap()),
    );
    assert_eq!(r, Err(RecvError), "the receiver sees the close");
    assert_eq!(s, Err(SendError(1)), "the sender gets its value back");
    assert_eq!(
        frx.try_recv(),
        Ok(0),
        "the buffered value survives the close"
    );
}

#[test]
fn mpmc_blocking_threads_deliver_every_value_once() {
    for cap in [0, 3] {
        let (tx, rx) = chan::bounded::<u32>(cap);
        let got = within(&format!("4 senders x 4 receivers, cap {cap}"), move || {
            let senders: Vec<_> = (0..4u32)
                .map(|s| {
                    let tx = tx.clone();
                    std::thread::spawn(move || {
                        for i in 0..250 {
                            tx.send_blocking(s * 1000 + i).unwrap();
                        }
                    })
                })
                .collect();
            drop(tx);
            let receivers: Vec<_> = (0..4)
                .map(|_| {
                    let rx = rx.clone();
                    std::thread::spawn(move || {
                        let mut v = Vec::new();
                        while let Ok(x) = rx.recv_blocking() {
                            v.push(x);
                        }
                        v
                    })
                })
                .collect();
            for s in senders {
                s.join().unwrap();
            }
            receivers
                .into_iter()
                .flat_map(|r| r.join().unwrap())
                .collect::<Vec<_>>()
        });
        assert_eq!(got.len(), 1000, "cap {cap}: every value received");
        let unique: HashSet<_> = got.iter().collect();
        assert_eq!(unique.len(), 1000, "cap {cap}: no value received twice");
    }
}

#[test]
fn per_sender_order_is_preserved() {
    let (tx, rx) = chan::bounded::<u32>(2);
    let got = within("one sender, one receiver, 1000 values", move || {
        let t = std::thread::spawn(move || {
            for i in 0..1000 {
                tx.send_blocking(i).unwrap();
            }
        });
        let v: Vec<u32> = std::iter::from_fn(|| rx.recv_blocking().ok()).collect();
        t.join().unwrap();
        v
    });
    assert_eq!(got, (0..1000).collect::<Vec<_>>());
}

#[test]
fn stream_yields_values_until_closed() {
    let (tx, rx) = chan::bounded::<u8>(0);
    let got = block_on_within("stream over a rendezvous channel", async move {
        let producer = std::thread::spawn(move || {
            for i in 0..5 {
                tx.send_blocking(i).unwrap();
            }
        });
        let v: Vec<u8> = rx.collect().await;
        producer.join().unwrap();
        v
    });
    assert_eq!(got, vec![0, 1, 2, 3, 4]);
}

#[test]
fn errors_display_clear_messages() {
    assert_eq!(
        SendError(1).to_string(),
        "sending on a closed channel (the value is returned in the error)"
    );
    assert!(TrySendError::Full(1)
        .to_string()
        .starts_with("sending on a full channel"));
    assert!(TrySendError::Closed(1)
        .to_string()
        .starts_with("sending on a closed channel"));
    assert_eq!(
        RecvError.to_string(),
        "receiving on a closed and empty channel"
    );
    assert!(TryRecvError::Empty
        .to_string()
        .starts_with("receiving on an empty channel"));
    assert_eq!(
        TryRecvError::Closed.to_string(),
        "receiving on a closed and empty channel"
    );
    assert_eq!(format!("{:?}", SendError(vec![1])), "SendError(..)");
}

#[test]
fn errors_implement_std_error() {
    fn is_error<E: std::error::Error + Send + Sync + 'static>(_: E) {}
    is_error(SendError(1u8));
    is_error(TrySendError::Full(1u8));
    is_error(RecvError);
    is_error(TryRecvError::Empty);
    assert_eq!(TrySendError::Closed(4).into_inner(), 4);
    assert!(TrySendError::Full(()).is_full() && !TrySendError::Full(()).is_closed());
}

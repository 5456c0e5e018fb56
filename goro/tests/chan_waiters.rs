//! The parked-operation machinery under real threads: waiters of every size
//! (the per-thread block cache and the plain-box fallback), blocks freed on
//! another thread than the one that allocated them, threads exiting with
//! cached blocks, and futures that move to another waker while parked.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::Poll;

use goro::chan::{self, RecvError, TryRecvError};
use support::chan::*;

/// Bigger than any cached block: parks through the plain-box path.
type Big = [u64; 64];

fn big(i: u64) -> Big {
    let mut b = [0; 64];
    b[0] = i;
    b[63] = !i;
    b
}

#[test]
fn values_too_big_for_a_cached_block_park_and_complete() {
    for cap in [0, 1] {
        let got = within("big values between two threads", move || {
            let (tx, rx) = chan::bounded::<Big>(cap);
            let t = std::thread::spawn(move || {
                for i in 0..2000 {
                    tx.send_blocking(big(i)).unwrap();
                }
            });
            let got: Vec<Big> = std::iter::from_fn(|| rx.recv_blocking().ok()).collect();
            t.join().unwrap();
            got
        });
        assert_eq!(got.len(), 2000, "cap {cap}");
        assert!(got.iter().enumerate().all(|(i, b)| *b == big(i as u64)));
    }
}

#[test]
fn a_parked_big_send_cancelled_gives_nothing_and_drops_nothing_twice() {
    let drops = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = chan::bounded::<(Big, Tracked)>(0);
    let mut send = tx.send((big(1), Tracked::new(1, &drops)));
    assert!(poll_once(&mut send).is_pending(), "no receiver");
    drop(send);
    assert_eq!(
        drops.load(Ordering::SeqCst),
        1,
        "the value dropped with the future"
    );
    assert_eq!(rx.try_recv().map(|(b, _)| b), Err(TryRecvError::Empty));
}

/// Many threads hand values around (each park allocates a waiter on one
/// thread; the owner frees it on the same thread, the completer on another
/// one only ever sees it), some operations are cancelled, and every thread
/// exits with its cache: every value is dropped exactly once.
#[test]
fn waiters_across_threads_lose_and_duplicate_nothing() {
    const THREADS: u32 = 4;
    const PER: u32 = 500;
    let drops = Arc::new(AtomicUsize::new(0));
    let d = drops.clone();
    let received = within("waiters across threads", move || {
        let (tx, rx) = chan::bounded::<Tracked>(0);
        let senders: Vec<_> = (0..THREADS)
            .map(|t| {
                let (tx, d) = (tx.clone(), d.clone());
                std::thread::spawn(move || {
                    for i in 0..PER {
                        let v = Tracked::new(t * PER + i, &d);
                        if i % 7 == 0 {
                            // Park, then give up: the value must come back
                            // out of the waiter (or have been taken).
                            let mut send = tx.send(v);
                            let _ = poll_once(&mut send);
                            drop(send);
                        } else {
                            tx.send_blocking(v).unwrap();
                        }
                    }
                })
            })
            .collect();
        drop(tx);
        let receivers: Vec<_> = (0..THREADS)
            .map(|_| {
                let rx = rx.clone();
                std::thread::spawn(move || {
                    let mut n = 0usize;
                    loop {
                        let mut recv = rx.recv();
                        match poll_once(&mut recv) {
                            Poll::Ready(Ok(_)) => n += 1,
                            Poll::Ready(Err(RecvError)) => return n,
                            Poll::Pending => {
                                // Sometimes cancel, sometimes wait it out.
                                if n.is_multiple_of(3) {
                                    drop(recv);
                                } else {
                                    match futures::executor::block_on(recv) {
                                        Ok(_) => n += 1,
                                        Err(RecvError) => return n,
                                    }
                                }
                            }
                        }
                    }
                })
            })
            .collect();
        for s in senders {
            s.join().unwrap();
        }
        receivers
            .into_iter()
            .map(|r| r.join().unwrap())
            .sum::<usize>()
    });
    let made = (THREADS * PER) as usize;
    assert_eq!(
        drops.load(Ordering::SeqCst),
        made,
        "every value dropped exactly once"
    );
    // Only the sends with i % 7 == 0 may give up: PER.div_ceil(7) per thread.
    let may_give_up = (THREADS * PER.div_ceil(7)) as usize;
    assert!(
        received <= made && received >= made - may_give_up,
        "received {received} of {made} values, with at most {may_give_up} sends given up"
    );
}

#[test]
fn a_parked_recv_moved_to_another_waker_is_woken_through_it() {
    for round in 0..200 {
        let (tx, rx) = chan::bounded::<u32>(0);
        let got = within("recv re-polled with a new waker", move || {
            let mut recv = Box::pin(rx.recv());
            // Parked with a waker that is then abandoned.
            let (first, waker) = counting_waker();
            assert!(poll_with(&mut recv, &waker).is_pending());
            let t = std::thread::spawn(move || tx.send_blocking(round));
            // Finish it on this thread's executor: a new waker.
            let got = futures::executor::block_on(recv);
            t.join().unwrap().unwrap();
            // The first waker may have been woken only if the send landed
            // before the new waker was swapped in.
            assert!(first.wakes.load(Ordering::SeqCst) <= 1);
            got
        });
        assert_eq!(got, Ok(round));
    }
}

#[test]
fn a_parked_send_moved_to_another_waker_is_woken_through_it() {
    for round in 0..200 {
        let (tx, rx) = chan::bounded::<u32>(0);
        let got = within("send re-polled with a new waker", move || {
            let mut send = Box::pin(tx.send(round));
            let (_first, waker) = counting_waker();
            assert!(poll_with(&mut send, &waker).is_pending());
            let t = std::thread::spawn(move || rx.recv_blocking());
            futures::executor::block_on(send).unwrap();
            t.join().unwrap()
        });
        assert_eq!(got, Ok(round));
    }
}

#[test]
fn a_parked_select_moved_to_another_waker_is_woken_through_it() {
    for round in 0..200 {
        let (tx_a, rx_a) = chan::bounded::<u32>(0);
        let (tx_b, rx_b) = chan::bounded::<u32>(0);
        let got = within("select re-polled with a new waker", move || {
            let mut sel = Box::pin(async move {
                goro::select! {
                    recv(rx_a) -> m => m,
                    recv(rx_b) -> m => m,
                }
            });
            let (_first, waker) = counting_waker();
            assert!(poll_with(&mut sel, &waker).is_pending());
            let t = std::thread::spawn(move || {
                if round % 2 == 0 {
                    tx_a.send_blocking(round)
                } else {
                    tx_b.send_blocking(round)
                }
            });
            let got = futures::executor::block_on(sel);
            t.join().unwrap().unwrap();
            got
        });
        assert_eq!(got, Ok(round));
    }
}

#[test]
fn a_parked_op_moved_between_runtime_tasks_completes() {
    // A recv future polled once in one task, then finished in another (a
    // different waker, on any P), while a third task sends.
    let rt = goro::Runtime::builder().procs(2).build().unwrap();
    let (total, parked) = rt.block_on(async {
        let (mut total, mut parked) = (0u64, 0u64);
        for i in 0..2000u64 {
            let (tx, rx) = chan::bounded::<u64>(0);
            let rx = Arc::new(rx);
            let (hand_tx, hand_rx) = chan::bounded(1);
            let r = rx.clone();
            let first = goro::spawn(async move {
                let mut recv = Box::pin(async move { r.recv().await });
                // Ready at once if the sender came first; else parked here.
                let early = match futures::poll!(recv.as_mut()) {
                    Poll::Ready(v) => Some(v.unwrap()),
                    Poll::Pending => None,
                };
                let parked = early.is_none();
                hand_tx
                    .send((recv, early))
                    .await
                    .unwrap_or_else(|_| panic!("hand-off"));
                parked
            });
            let second = goro::spawn(async move {
                match hand_rx.recv().await.unwrap() {
                    (_, Some(v)) => v,
                    (recv, None) => recv.await.unwrap(),
                }
            });
            let sender = goro::spawn(async move { tx.send(i).await.unwrap() });
            parked += u64::from(first.await.unwrap());
            total += second.await.unwrap();
            sender.await.unwrap();
        }
        (total, parked)
    });
    assert_eq!(total, (0..2000u64).sum::<u64>());
    assert!(parked > 0, "some receives parked in the first task");
}

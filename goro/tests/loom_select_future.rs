//! Loom models of `select!`'s `await(future)` case (`chan/select_future.rs`):
//! a parked select that has both channel cases and future cases, polled
//! again, first aborts its own signal (so that no channel can complete it
//! any more), withdraws its channel waiters, and only then polls its
//! futures; if a channel claimed it first, that channel case is taken and
//! no future is polled.
//!
//! The invariant checked: exactly one case completes, and no value is
//! lost. A value sent on a channel case is received by the select, or is
//! still in its channel, or was never taken from the select's send case;
//! and a future case's output is not lost either. Every future case here
//! is another channel's `rx.recv()`, so a future that took a value and was
//! then dropped, or whose output the select threw away, shows up as a
//! value missing from the count.
//!
//! Run with:
//! `RUSTFLAGS="--cfg loom" cargo test -p goro --test loom_select_future --release`
//!
//! Three loom threads each (the select's, and one per channel
//! counterpart), explored with at most 5 preemptions per execution
//! (`model_bounded`, as `loom_chan.rs`'s select models;
//! `LOOM_MAX_PREEMPTIONS=N` overrides it): 3.5 to 4.7 s each on the
//! 2-core VM, 7 to 9 s for the file (0.2 s each at 3, 0.9 s at 4),
//! 2026-11-27. Each model was checked to fail on planted
//! bugs in `Select::poll` (the plants and the raw output are in
//! `bench/results/2026-11-27-loom-select-future-plants.txt`):
//!
//! - *futures polled before the abort, channel preferred*: a parked select
//!   polls its futures first, then aborts; when the abort loses (a channel
//!   claimed it meanwhile) it returns the channel case and drops the ready
//!   future's output. Both models fail: the 2 the `recv()` future took is
//!   gone.
//! - *futures polled before the abort, future preferred*: as above, but a
//!   ready future is returned after withdrawing the channel waiters, even
//!   when a channel claimed the select meanwhile. The send model fails (the
//!   receiver got the 1, the select reports the future); the recv model
//!   passes, rightly: the claimed recv waiter's value goes back to the
//!   front of its channel on withdrawal (`Chan::unpark_recv`), so nothing
//!   is lost.
//! - *abort skipped*: the parked select withdraws its waiters without
//!   aborting its signal first and starts over at pass 1. The send model
//!   fails (a send case whose value a receiver took is offered again
//!   without its value: `SendCase::try_now`'s `expect` panics); the recv
//!   model passes, as above (each withdrawal aborts the signal under the
//!   channel's lock and puts a claimed value back).
//! - *futures never re-polled while parked* (the `parked_now ||
//!   !this.futures` condition dropped): the send model deadlocks when the
//!   receiver looked before the select parked, so that only the future can
//!   complete it; the recv model passes (its `a` always completes it).
#![cfg(loom)]

mod support;

use goro::chan::{self, TryRecvError};
use loom::thread;
use support::loom_exec::{block_on, model_bounded};

/// The preemption bound of this file's models.
const BOUND: usize = 5;

/// `recv(rx_a)` against `await(rx_b.recv())`, both channels of capacity 1,
/// with one sender thread per channel. The select takes exactly one value,
/// and the other one is still in its channel: received + still queued is
/// 2, whichever completed first and however the wakes interleave with the
/// re-poll. Fails when a parked select polls its future (which takes `b`'s
/// value) before aborting and then returns the channel case that claimed
/// it meanwhile, dropping the future's output.
#[test]
fn select_recv_against_a_recv_future_loses_no_value() {
    model_bounded(BOUND, || {
        let (tx_a, rx_a) = chan::bounded::<u8>(1);
        let (tx_b, rx_b) = chan::bounded::<u8>(1);
        let a = thread::spawn(move || {
            tx_a.try_send(1).unwrap();
            tx_a
        });
        let b = thread::spawn(move || {
            tx_b.try_send(2).unwrap();
            tx_b
        });
        let got = block_on(async {
            goro::select! {
                recv(rx_a) -> m => ('a', m.unwrap()),
                await(rx_b.recv()) -> m => ('b', m.unwrap()),
            }
        });
        let _tx_a = a.join().unwrap();
        let _tx_b = b.join().unwrap();
        let (left_a, left_b) = (rx_a.try_recv(), rx_b.try_recv());
        match got {
            ('a', 1) => assert_eq!(
                (left_a, left_b),
                (Err(TryRecvError::Empty), Ok(2)),
                "the select took a's 1: b's 2 must still be queued"
            ),
            ('b', 2) => assert_eq!(
                (left_a, left_b),
                (Ok(1), Err(TryRecvError::Empty)),
                "the select took b's 2: a's 1 must still be queued"
            ),
            other => panic!("unexpected {other:?}"),
        }
    });
}

/// `send(tx_a, 1)` against `await(rx_b.recv())`: `a` is a rendezvous
/// channel whose receiver thread tries once to take a value, `b` has
/// capacity 1 and a sender thread. The receiver got the 1 exactly when the
/// select reports its send case; otherwise the 1 never entered the channel.
/// And `b`'s 2 is either the select's (future case) or still queued. Fails
/// when a parked select polls its future before aborting: returning the
/// ready future although the receiver had taken the 1 (the send both
/// happened and was not reported), or returning the send case and dropping
/// the future's 2; when the abort is skipped; and (a deadlock) when a
/// parked select never re-polls its future.
#[test]
fn select_send_against_a_recv_future_delivers_once_or_not_at_all() {
    model_bounded(BOUND, || {
        let (tx_a, rx_a) = chan::bounded::<u8>(0);
        let (tx_b, rx_b) = chan::bounded::<u8>(1);
        let a = thread::spawn(move || {
            let got = rx_a.try_recv().ok();
            (got, rx_a)
        });
        let b = thread::spawn(move || {
            tx_b.try_send(2).unwrap();
            tx_b
        });
        let got = block_on(async {
            goro::select! {
                send(tx_a, 1) -> r => { r.unwrap(); 'a' }
                await(rx_b.recv()) -> m => { assert_eq!(m, Ok(2)); 'b' }
            }
        });
        let (received, rx_a) = a.join().unwrap();
        let _tx_b = b.join().unwrap();
        assert_eq!(
            rx_a.try_recv(),
            Err(TryRecvError::Empty),
            "nothing left behind on a"
        );
        let left_b = rx_b.try_recv();
        match got {
            'a' => {
                assert_eq!(
                    received,
                    Some(1),
                    "the send case won: the receiver has the 1"
                );
                assert_eq!(
                    left_b,
                    Ok(2),
                    "the send case won: b's 2 must still be queued"
                );
            }
            'b' => {
                assert_eq!(
                    received, None,
                    "the future won: the 1 must not have been delivered"
                );
                assert_eq!(left_b, Err(TryRecvError::Empty), "the future took the 2");
            }
            other => panic!("unexpected {other:?}"),
        }
        drop(tx_a);
    });
}

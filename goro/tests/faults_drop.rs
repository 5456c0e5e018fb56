//! Faults in `Drop`: a panicking `Drop` of a value held by a channel (in
//! its buffer, or in a sender parked on it and aborted), and of a task's
//! own future or output, dropped by the scheduler when the task completes,
//! is aborted, finishes detached or is left at shutdown. The panic reaches
//! whoever dropped the value (or the panic hook), every other value is
//! still dropped once, the process does not abort, and the runtime is
//! whole (`support::faults::assert_usable`).
//!
//! Covered elsewhere (not repeated here): a panicking `Drop` of a value
//! retired by a pool cycle
//! (`pool_cycle::a_panic_in_a_retired_values_drop_spares_the_others_in_the_lists` / `_in_the_rings`).
#![cfg(not(loom))]

mod support;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use support::faults::{
    all_dropped_once, assert_usable, at_procs, bomb, record_panics, Bomb, Guard, WAIT,
};
use support::pool::Ledger;
use support::wait_until;

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

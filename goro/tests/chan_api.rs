//! The channel API people reach for from Go, crossbeam and tokio:
//! `unbounded`, `never`, timeouts, iteration, `select!`'s `biased;`,
//! `default(timeout)`, empty and default-only forms, temporaries and
//! trailing commas, and `select_blocking!` on plain threads.

mod support;

use goro::chan::{
    bounded, never, unbounded, Receiver, RecvTimeoutError, SendTimeoutError, TryRecvError,
};
use std::time::{Duration, Instant};
use support::within;

const LIMIT: Duration = Duration::from_secs(30);
const SHORT: Duration = Duration::from_millis(5);

/// Runs `f` in a 2-P runtime, failing with `what` past [`LIMIT`].
fn in_runtime<T: Send + 'static>(
    what: &str,
    f: impl std::future::Future<Output = T> + Send + 'static,
) -> T {
    within(LIMIT, what, move || {
        goro::Runtime::builder()
            .procs(2)
            .build()
            .unwrap()
            .block_on(f)
    })
}

#[test]
fn unbounded_never_reports_full() {
    let (tx, rx) = unbounded::<u32>();
    assert_eq!(tx.capacity(), usize::MAX);
    for i in 0..100_000 {
        tx.try_send(i).unwrap();
    }
    assert_eq!(rx.try_iter().count(), 100_000);
}

/// The capacity shares a word with the closed flag (31 bits): the largest
/// bounded capacity is kept exactly, closing does not change it, and a
/// larger one is refused with the accepted range and the alternative.
#[test]
fn capacities_up_to_two_to_the_31_minus_2_are_kept_and_larger_ones_refused() {
    let max = (1usize << 31) - 2;
    let (tx, rx) = bounded::<u8>(max);
    assert_eq!(tx.capacity(), max);
    tx.close();
    assert_eq!(rx.capacity(), max, "closing changed the capacity");
    assert!(rx.is_closed());
    let (tx, _rx) = bounded::<u8>(usize::MAX);
    assert_eq!(tx.capacity(), usize::MAX, "usize::MAX means unbounded");
    for cap in [max + 1, 1 << 40, usize::MAX - 1] {
        let e = std::panic::catch_unwind(|| bounded::<u8>(cap)).unwrap_err();
        let msg = e
            .downcast_ref::<String>()
            .expect("a formatted panic message");
        assert!(
            msg.contains(&format!("bounded({cap})"))
                && msg.contains("2147483646")
                && msg.contains("unbounded()"),
            "bounded({cap}) panicked with: {msg}"
        );
    }
}

#[test]
fn never_is_never_ready_and_switches_a_case_off() {
    let off: Receiver<u8> = never();
    assert_eq!(off.try_recv(), Err(TryRecvError::Empty));
    assert!(!off.is_closed());
    assert_eq!(
        off.recv_timeout_blocking(SHORT),
        Err(RecvTimeoutError::Timeout)
    );
    let (tx, rx) = bounded::<u8>(1);
    tx.try_send(1).unwrap();
    for enabled in [false, true] {
        let got = goro::select_blocking! {
            recv(if enabled { &rx } else { &off }) -> v => v.ok(),
            default => None,
        };
        assert_eq!(got, enabled.then_some(1));
    }
}

#[test]
fn recv_timeout_in_a_task_times_out_then_receives() {
    in_runtime("recv_timeout", async {
        let (tx, rx) = bounded::<u32>(0);
        let start = Instant::now();
        assert_eq!(rx.recv_timeout(SHORT).await, Err(RecvTimeoutError::Timeout));
        assert!(
            start.elapsed() >= SHORT,
            "timed out early: {:?}",
            start.elapsed()
        );
        let sender = goro::spawn(async move { tx.send(9).await });
        assert_eq!(rx.recv_timeout(LIMIT).await, Ok(9));
        sender.await.unwrap().unwrap();
        // The last sender is gone: closed, not a timeout.
        assert_eq!(rx.recv_timeout(LIMIT).await, Err(RecvTimeoutError::Closed));
    });
}

#[test]
fn send_timeout_in_a_task_gives_the_value_back() {
    in_runtime("send_timeout", async {
        let (tx, rx) = bounded::<String>(0);
        let start = Instant::now();
        let err = tx
            .send_timeout("kept".to_string(), SHORT)
            .await
            .unwrap_err();
        assert!(
            start.elapsed() >= SHORT,
            "timed out early: {:?}",
            start.elapsed()
        );
        assert!(err.is_timeout());
        assert_eq!(err.into_inner(), "kept");
        // Nothing was left behind in the channel.
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
        // A receiver that comes in time gets the value.
        let receiver = goro::spawn(async move { rx.recv().await });
        tx.send_timeout("taken".to_string(), LIMIT).await.unwrap();
        assert_eq!(receiver.await.unwrap().as_deref(), Ok("taken"));
        tx.close();
        assert_eq!(
            tx.send_timeout("closed".to_string(), LIMIT).await,
            Err(SendTimeoutError::Closed("closed".to_string()))
        );
    });
}

#[test]
fn blocking_timeouts_work_on_plain_threads() {
    within(LIMIT, "blocking timeouts", || {
        let (tx, rx) = bounded::<u32>(1);
        assert_eq!(
            rx.recv_timeout_blocking(SHORT),
            Err(RecvTimeoutError::Timeout)
        );
        tx.send_timeout_blocking(1, SHORT).unwrap();
        assert_eq!(
            tx.send_timeout_blocking(2, SHORT),
            Err(SendTimeoutError::Timeout(2))
        );
        let t = std::thread::spawn(move || rx.recv_timeout_blocking(LIMIT));
        assert_eq!(t.join().unwrap(), Ok(1));
    });
}

#[test]
fn iter_ends_when_the_channel_closes() {
    let got = within(LIMIT, "iter over a channel", || {
        let (tx, rx) = bounded::<u32>(0);
        let producer = std::thread::spawn(move || {
            for i in 0..100 {
                tx.send_blocking(i).unwrap();
            }
        });
        let got: Vec<u32> = rx.iter().collect();
        producer.join().unwrap();
        got
    });
    assert_eq!(got, (0..100).collect::<Vec<_>>());
}

#[test]
fn a_receiver_is_a_stream() {
    use futures::StreamExt;
    let sum = in_runtime("a receiver as a stream", async {
        let (tx, rx) = bounded::<u64>(4);
        goro::spawn(async move {
            for i in 1..=100 {
                tx.send(i).await.unwrap();
            }
        });
        rx.fold(0, |a, v| async move { a + v }).await
    });
    assert_eq!(sum, 5050);
}

#[test]
fn biased_select_prefers_source_order() {
    in_runtime("biased select", async {
        let (ta, a) = bounded::<u8>(1);
        let (tb, b) = bounded::<u8>(1);
        for _ in 0..200 {
            ta.try_send(1).unwrap();
            tb.try_send(2).unwrap();
            let first = goro::select! {
                biased;
                recv(a) -> v => v.unwrap(),
                recv(b) -> v => v.unwrap(),
            };
            assert_eq!(first, 1, "both ready: the first case wins");
            let second = goro::select! {
                biased;
                recv(b) -> v => v.unwrap(),
                recv(a) -> v => v.unwrap(),
                default => 0,
            };
            assert_eq!(
                second, 2,
                "both ready: the first case wins, with default too"
            );
        }
    });
}

#[test]
fn default_with_a_timeout_withdraws_every_case() {
    in_runtime("default(timeout)", async {
        let (tx, rx) = bounded::<u8>(0); // nobody receives
        let (_keep, idle) = bounded::<u8>(0);
        let start = Instant::now();
        let r = goro::select! {
            send(tx, 5) -> _ => "sent",
            recv(idle) -> _ => "received",
            default(SHORT) => "timed out",
        };
        assert_eq!(r, "timed out");
        assert!(
            start.elapsed() >= SHORT,
            "timed out early: {:?}",
            start.elapsed()
        );
        assert_eq!(
            rx.try_recv(),
            Err(TryRecvError::Empty),
            "the send case left nothing"
        );
        // A case ready in time wins over the timeout.
        let (tx2, rx2) = bounded::<u8>(1);
        tx2.try_send(3).unwrap();
        let r = goro::select! {
            recv(rx2) -> v => v.unwrap(),
            default(LIMIT) => 0,
        };
        assert_eq!(r, 3);
    });
}

#[test]
fn empty_select_waits_forever_and_default_only_runs_default() {
    in_runtime("empty select", async {
        let waited = goro::time::timeout(SHORT, async {
            goro::select! {}
        })
        .await;
        assert!(waited.is_err(), "`select! {{}}` never completes");
        assert_eq!(goro::select! { default => 1 }, 1);
        let start = Instant::now();
        assert_eq!(goro::select! { default(SHORT) => 2 }, 2);
        assert!(start.elapsed() >= SHORT);
    });
}

#[test]
fn temporaries_and_trailing_commas_are_accepted() {
    let (tx, rx) = bounded::<u8>(1);
    let make_rx = || rx.clone();
    tx.try_send(4).unwrap();
    let got = goro::select_blocking! {
        recv(make_rx(),) -> v => v.unwrap(),
        send(tx.clone(), 1,) -> _ => 0,
        default => 0,
    };
    // Either case may win; both are ready.
    assert!(got == 4 || got == 0);
    let got = futures::executor::block_on(async {
        goro::select! {
            recv(make_rx()) -> v => v.is_ok(),
            send(tx.clone(), 2) -> r => r.is_ok(),
        }
    });
    assert!(got);
}

#[test]
fn select_blocking_waits_on_plain_threads() {
    within(LIMIT, "select_blocking!", || {
        let (tx, rx) = bounded::<u32>(0);
        let (quit_tx, quit) = bounded::<()>(0);
        let worker = std::thread::spawn(move || {
            let mut got = 0;
            loop {
                goro::select_blocking! {
                    recv(rx) -> v => got += v.unwrap(),
                    recv(quit) -> _ => return got,
                }
            }
        });
        for i in 1..=10 {
            tx.send_blocking(i).unwrap();
        }
        quit_tx.close();
        assert_eq!(worker.join().unwrap(), 55);

        let (_keep, idle) = bounded::<u8>(0);
        let start = Instant::now();
        let r = goro::select_blocking! {
            recv(idle) -> _ => "received",
            default(SHORT) => "timed out",
        };
        assert_eq!(r, "timed out");
        assert!(start.elapsed() >= SHORT);
        let r = goro::select_blocking! {
            biased;
            recv(idle) -> _ => "received",
            default => "nothing ready",
        };
        assert_eq!(r, "nothing ready");
    });
}

#[test]
fn a_select_with_default_whose_body_awaits_is_send() {
    fn check<F: std::future::Future + Send>(_: F) {}
    let (tx, rx) = bounded::<u8>(1);
    check(async move {
        goro::select! {
            recv(rx) -> _ => tx.send(1).await.unwrap(),
            default => goro::yield_now().await,
        }
    });
}

/// A send in a `select!` with `default(timeout)` against a
/// `recv_timeout_blocking`, both giving up around the same moment, many
/// times: a value is reported sent exactly when it was received. A stress
/// check of `Select::cancel` and `RecvFuture::cancel` (without them a send
/// claimed at the deadline was delivered and reported timed out); the
/// window is a few instructions wide, and this test did not catch a
/// planted removal of `Select::cancel` in two runs.
#[test]
fn timeouts_at_the_deadline_neither_lose_nor_invent_a_value() {
    within(LIMIT, "timeouts racing hand-offs", || {
        const ROUNDS: u32 = 3_000;
        let tick = Duration::from_micros(50);
        let (tx, rx) = bounded::<u32>(0);
        let receiver = std::thread::spawn(move || {
            let mut got = Vec::new();
            for _ in 0..ROUNDS {
                if let Ok(v) = rx.recv_timeout_blocking(tick) {
                    got.push(v);
                }
            }
            (got, rx)
        });
        let mut sent = Vec::new();
        for i in 0..ROUNDS {
            goro::select_blocking! {
                send(tx, i) -> r => { r.unwrap(); sent.push(i) }
                default(tick) => {}
            }
        }
        let (got, rx) = receiver.join().unwrap();
        assert_eq!(
            rx.try_recv(),
            Err(TryRecvError::Empty),
            "nothing went back to the channel"
        );
        assert_eq!(got, sent, "received exactly what was reported sent");
    });
}

//! Channel timers under Go 1.23's lazy scheme: a `Timer`, `Ticker` or
//! `after` channel is on a timer heap only while a receiver waits on it, and
//! is otherwise run by its receivers when they look. What a user must see of
//! that: values arrive for every kind of receiver (a `select!`, a task, a
//! plain thread, a task of another runtime), `stop`/`reset` report Go 1.23's
//! "pending" and leave no stale value behind, concurrent receivers never get
//! one tick twice, a cancelled receiver does not strand its ticker, and a
//! dropped ticker costs an idle runtime nothing.

mod support;

use goro::chan::{bounded, TryRecvError};
use goro::time::{after, after_func, sleep, timeout, Ticker, Timer};
use std::time::{Duration, Instant};
use support::{wait_until, within};

const LIMIT: Duration = Duration::from_secs(60);

/// How long a receive that must not complete is given to complete anyway.
const QUIET: Duration = Duration::from_millis(30);

fn rt(procs: usize) -> goro::Runtime {
    goro::Runtime::builder().procs(procs).build().unwrap()
}

/// 200 `select!`s between `after(d)` and a channel nobody sends on, with
/// deadlines from "already due" (the receiver runs the timer inline) to
/// 1.5 ms (the select parks and the timer goes on a heap).
async fn select_after_beside_a_dead_channel(who: &'static str) {
    let (_tx, never) = bounded::<u8>(0);
    for i in 0..200u64 {
        let d = Duration::from_micros((i % 4) * 500);
        let t0 = Instant::now();
        let got = goro::select! {
            recv(never) -> _ => None,
            recv(after(d)) -> at => Some(at),
        };
        let at = got
            .unwrap_or_else(|| panic!("{who}: select {i} completed on a channel nobody sends on"))
            .expect("a timer channel is never closed");
        let now = Instant::now();
        assert!(
            now >= t0 + d,
            "{who}: after({d:?}) fired early, {:?} in",
            now - t0
        );
        assert!(
            at <= now,
            "{who}: the delivered time is later than the receive"
        );
    }
}

#[test]
fn after_in_select_fires_beside_a_channel_that_is_never_ready() {
    for procs in [1, 2] {
        within(
            LIMIT,
            &format!("select on after() at procs {procs}"),
            move || {
                rt(procs).block_on(async {
                    // One select loop in a task (a worker with a P), one on
                    // the block_on thread (no P: its timers go to a P's heap
                    // round-robin).
                    let task = goro::spawn(select_after_beside_a_dead_channel("task"));
                    select_after_beside_a_dead_channel("block_on").await;
                    task.await.expect("select task");
                });
            },
        );
    }
}

// Go 1.23 semantics for the three stop tests: `Stop` returns whether the
// timer was pending, and a value that fired but was never received counts
// as pending (Stop discards it). So only a timer whose value was received
// (or that was already stopped) reports false. Go 1.26 checked:
// `NewTimer(1ms); Sleep(5ms); Stop()` is true.

#[test]
fn stop_after_an_unread_fire_returns_true_and_no_value_arrives() {
    within(LIMIT, "stop after an unread fire", || {
        rt(2).block_on(async {
            let t = Timer::new(Duration::from_millis(1));
            sleep(Duration::from_millis(5)).await; // past the deadline, nobody reading
            assert!(
                t.stop(),
                "a due timer whose value was never received is pending (Go 1.23)"
            );
            assert_eq!(
                t.rx().try_recv(),
                Err(TryRecvError::Empty),
                "the value from before stop was discarded"
            );
            assert!(
                timeout(QUIET, t.rx().recv()).await.is_err(),
                "a value arrived after stop returned true"
            );
            assert!(!t.stop(), "a second stop finds nothing pending");
        });
    });
}

#[test]
fn stop_before_the_deadline_returns_true_and_no_value_arrives() {
    within(LIMIT, "stop before the deadline", || {
        rt(2).block_on(async {
            let t = Timer::new(Duration::from_millis(10));
            assert!(t.stop(), "an armed timer is pending");
            sleep(Duration::from_millis(15)).await; // past the old deadline
            assert_eq!(t.rx().try_recv(), Err(TryRecvError::Empty));
            assert!(
                timeout(QUIET, t.rx().recv()).await.is_err(),
                "a stopped timer delivered a value"
            );
        });
    });
}

#[test]
fn stop_after_the_value_was_received_returns_false() {
    within(LIMIT, "stop after receive", || {
        rt(2).block_on(async {
            // A receive that parks (the timer goes on a heap) and one that
            // runs the due timer inline.
            for wait_first in [false, true] {
                let t = Timer::new(Duration::from_millis(2));
                if wait_first {
                    sleep(Duration::from_millis(5)).await;
                }
                t.rx().recv().await.expect("the timer fires");
                assert!(
                    !t.stop(),
                    "nothing is pending once the value was received (wait_first={wait_first})"
                );
            }
        });
    });
}

#[test]
fn reset_after_an_unread_fire_returns_true_and_only_the_new_value_arrives() {
    within(LIMIT, "reset after an unread fire", || {
        rt(2).block_on(async {
            let t = Timer::new(Duration::from_millis(1));
            sleep(Duration::from_millis(5)).await; // fired or due, nobody reading
            let reset_at = Instant::now();
            assert!(
                t.reset(Duration::from_millis(20)),
                "an undelivered value is pending (Go 1.23)"
            );
            assert_eq!(
                t.rx().try_recv(),
                Err(TryRecvError::Empty),
                "the value of the old arming survived reset"
            );
            let at = t.rx().recv().await.expect("the re-armed timer fires");
            // The channel carries the deadline it fired for: the old one
            // was about `reset_at - 4 ms`.
            assert!(
                at >= reset_at + Duration::from_millis(20),
                "received a value {:?} before the new deadline: the old arming's",
                reset_at + Duration::from_millis(20) - at
            );
            assert_eq!(
                t.rx().try_recv(),
                Err(TryRecvError::Empty),
                "one arming, one value"
            );
        });
    });
}

#[test]
fn ticker_read_in_a_loop_delivers_ticks() {
    for procs in [1, 2] {
        within(LIMIT, &format!("20 ticks at procs {procs}"), move || {
            let rt = rt(procs);
            let h = rt.spawn(async {
                let period = Duration::from_millis(2);
                let t = Ticker::new(period);
                let mut last: Option<Instant> = None;
                for _ in 0..20 {
                    let at = t
                        .rx()
                        .recv()
                        .await
                        .expect("a ticker channel is never closed");
                    if let Some(prev) = last {
                        assert!(
                            at >= prev + period,
                            "ticks {:?} apart, period {period:?}",
                            at - prev
                        );
                    }
                    last = Some(at);
                }
                t.stop();
            });
            rt.block_on(h).expect("ticker task");
        });
    }
}

#[test]
fn ticker_receiver_cancelled_mid_wait_gets_ticks_when_it_waits_again() {
    within(LIMIT, "ticker after a cancelled receive", || {
        rt(2).block_on(async {
            let period = Duration::from_millis(100);
            let t = Ticker::new(period);
            t.rx().recv().await.expect("first tick");
            let mut cancelled = 0;
            for round in 0..4 {
                // The next tick is about a period away: the receive parks
                // (the ticker goes on a heap) and is dropped when the
                // timeout elapses (the last waiter leaves: its heap entry
                // is orphaned).
                if timeout(Duration::from_millis(5), t.rx().recv())
                    .await
                    .is_err()
                {
                    cancelled += 1;
                }
                if round % 2 == 1 {
                    // Nobody waits while the tick falls due: the next
                    // receive must run the ticker itself.
                    sleep(period + Duration::from_millis(10)).await;
                }
                timeout(Duration::from_secs(10), t.rx().recv())
                    .await
                    .unwrap_or_else(|_| {
                        panic!("round {round}: no tick within 10 s after a cancelled receive")
                    })
                    .expect("a ticker channel is never closed");
            }
            assert!(
                cancelled > 0,
                "no receive was ever cancelled mid-wait (each had a tick within 5 ms)"
            );
            t.stop();
        });
    });
}

#[test]
fn timer_received_with_recv_blocking_on_a_plain_thread_fires() {
    within(LIMIT, "recv_blocking on a timer", || {
        let rt = rt(2);
        // Not yet due when the thread parks: the timer goes on a P's heap
        // from a thread that belongs to no runtime. Then one already due:
        // the plain thread runs it inline.
        for (d, wait) in [
            (Duration::from_millis(20), Duration::ZERO),
            (Duration::from_millis(1), Duration::from_millis(5)),
        ] {
            // Before either timer computes its deadline (exact: goro's
            // timer clock is `Instant`'s, `sched/timer/clock.rs`).
            let deadline = Instant::now() + d;
            let t = rt.block_on(async move { Timer::new(d) });
            let after_rx = rt.block_on(async move { after(d) });
            std::thread::sleep(wait); // let the deadline pass when asked to
            let got = std::thread::spawn(move || {
                let a = t.rx().recv_blocking();
                let b = after_rx.recv_blocking();
                (a, b, Instant::now())
            })
            .join()
            .expect("plain receiving thread");
            assert!(got.0.is_ok() && got.1.is_ok(), "{got:?}");
            assert!(got.2 >= deadline, "fired {:?} early", deadline - got.2);
        }
    });
}

#[test]
fn timer_made_on_one_runtime_fires_for_a_task_of_another() {
    within(LIMIT, "timer across runtimes", || {
        let (home, other) = (rt(1), rt(2));
        // Taken before the timer computes its own deadline, which is later:
        // goro's timer clock is `Instant`'s exactly (`sched/timer/clock.rs`), so
        // no slack is allowed.
        let deadline = Instant::now() + Duration::from_millis(20);
        let t = home.block_on(async { Timer::new(Duration::from_millis(20)) });
        let h = other.spawn(async move {
            let at = t.rx().recv().await;
            (at, t.stop())
        });
        let (at, stopped) = other.block_on(h).expect("receiving task");
        let at = at.expect("the timer fires");
        let now = Instant::now();
        assert!(
            at >= deadline && now >= deadline,
            "fired early: value {:?}, received {:?} before the deadline",
            deadline.saturating_duration_since(at),
            deadline.saturating_duration_since(now)
        );
        assert!(!stopped, "received, so nothing pending");
    });
}

#[test]
fn timer_outlives_the_runtime_it_was_made_on_when_another_receives_it() {
    within(LIMIT, "timer after its runtime is gone", || {
        let home = rt(1);
        let t = home.block_on(async { Timer::new(Duration::from_millis(20)) });
        drop(home);
        let other = rt(2);
        let h = other.spawn(async move { t.rx().recv().await });
        other
            .block_on(h)
            .expect("receiving task")
            .expect("the timer fires on the runtime that waits for it");
    });
}

#[test]
fn concurrent_receivers_of_one_ticker_all_progress_and_never_share_a_tick() {
    within(LIMIT, "8 receivers of one ticker", || {
        const RECEIVERS: usize = 8;
        const EACH: usize = 10;
        let rt = rt(4);
        let period = Duration::from_millis(1);
        let start = Instant::now();
        let ticks: Vec<Instant> = rt.block_on(async move {
            let t = Ticker::new(period);
            let hs: Vec<_> = (0..RECEIVERS)
                .map(|_| {
                    let rx = t.rx().clone();
                    goro::spawn(async move {
                        let mut got = Vec::with_capacity(EACH);
                        for _ in 0..EACH {
                            got.push(rx.recv().await.expect("a ticker channel is never closed"));
                        }
                        got
                    })
                })
                .collect();
            let mut all = Vec::new();
            for h in hs {
                all.extend(h.await.expect("receiver task"));
            }
            t.stop();
            all
        });
        let elapsed = start.elapsed();
        assert_eq!(ticks.len(), RECEIVERS * EACH);
        let mut unique = ticks.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(
            unique.len(),
            ticks.len(),
            "{} ticks were delivered to more than one receiver",
            ticks.len() - unique.len()
        );
        // Ticks may be dropped, never invented: no more than the periods
        // that elapsed, plus the first.
        let periods = (elapsed.as_nanos() / period.as_nanos()) as usize + 1;
        assert!(
            ticks.len() <= periods,
            "{} ticks in {elapsed:?} of a {period:?} ticker",
            ticks.len()
        );
    });
}

#[test]
fn a_dropped_ticker_lets_the_runtime_go_idle() {
    within(LIMIT, "idle after a dropped ticker", || {
        let rt = rt(2);
        rt.block_on(async {
            let t = Ticker::new(Duration::from_millis(1));
            let clone = t.rx().clone();
            for _ in 0..5 {
                t.rx().recv().await.expect("tick");
            }
            // Every handle and receiver gone while nobody waits: the ticker
            // must stop (nobody could see it fire). A heap entry left from
            // the last wait may surface once, as a zombie.
            drop(clone);
            drop(t);
        });
        assert!(
            rt.stats().timers_fired > 0,
            "the parked receives put the ticker on a heap (else this test shows nothing)"
        );
        // A ticker still running would fire and wake a thread every 1 ms.
        let activity = || {
            let s = rt.stats();
            (s.timers_fired, s.timer_sleeper_wakes, s.parks, s.unparks)
        };
        let mut prev = activity();
        wait_until(
            Duration::from_secs(10),
            "no timer fire and no thread wake-up for 100 ms after the ticker was dropped",
            || {
                std::thread::sleep(Duration::from_millis(100)); // the observation window
                let now = activity();
                let quiet = now == prev;
                prev = now;
                quiet
            },
        );
        assert!(
            rt.schedtrace().contains("idleprocs=2"),
            "{}",
            rt.schedtrace()
        );
    });
}

#[test]
fn after_func_timer_channel_never_receives_and_is_not_closed() {
    within(LIMIT, "after_func rx", || {
        rt(2).block_on(async {
            let (ran_tx, ran) = bounded::<()>(1);
            let t = after_func(Duration::from_millis(5), move || {
                let _ = ran_tx.try_send(());
            });
            assert_eq!(t.rx().try_recv(), Err(TryRecvError::Empty));
            timeout(Duration::from_secs(10), ran.recv())
                .await
                .expect("the function ran within 10 s")
                .expect("its channel is open");
            // Fired: still nothing on `rx`, and it is not closed (Go's nil C
            // blocks forever).
            assert_eq!(t.rx().try_recv(), Err(TryRecvError::Empty));
            assert!(!t.rx().is_closed(), "an after_func rx is never closed");
            assert!(
                timeout(QUIET, t.rx().recv()).await.is_err(),
                "an after_func timer's rx received something"
            );
            assert!(!t.stop(), "fired, so nothing pending");
        });
    });
}

//! Timers: order, never early, stop/reset races, many live timers, timers
//! armed from threads without a P, an idle runtime waking for a timer.

mod support;

use goro::time::{after_func, sleep, sleep_until, timeout, Ticker, Timer};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::within;

const LIMIT: Duration = Duration::from_secs(60);

fn rt(procs: usize) -> goro::Runtime {
    goro::Runtime::builder().procs(procs).build().unwrap()
}

/// 50 tasks sleep until deadlines 1 ms apart (spawned in reverse order, so
/// the heap must reorder them), all starting 50 ms from now so that every
/// task is parked before the first deadline even on a loaded machine.
/// Returns for each deadline, in deadline order, the position at which its
/// task woke.
///
/// Positions, not instants, and `sleep_until` from one base, not
/// `Timer::new(d)` per task: a deadline computed inside each task moves
/// with that task's start, and a task started late would compare its own
/// lateness, not the heap's order.
fn fire_positions(rt: &goro::Runtime) -> Vec<(Duration, usize)> {
    let base = Instant::now() + Duration::from_millis(50);
    rt.block_on(async move {
        let order = Arc::new(AtomicUsize::new(0));
        let hs: Vec<_> = (0..50u64)
            .rev()
            .map(|i| {
                let order = order.clone();
                goro::spawn(async move {
                    let d = Duration::from_millis(i);
                    sleep_until(base + d).await;
                    let pos = order.fetch_add(1, Ordering::SeqCst);
                    let now = Instant::now();
                    assert!(
                        now >= base + d,
                        "the sleep until base + {d:?} woke {:?} early",
                        (base + d) - now
                    );
                    (d, pos)
                })
            })
            .collect();
        let mut out = Vec::new();
        for h in hs {
            out.push(h.await.unwrap());
        }
        out.sort();
        out
    })
}

#[test]
fn timers_on_one_heap_fire_in_deadline_order() {
    let mut global = goro::Policy::default();
    global.timers = goro::TimerPlacement::Global;
    // (procs, policy, how far apart in deadline order two timers must be
    // for their order to be checked). With one P, woken tasks run in the
    // order their timers fire: exact. With two, two tasks woken by one
    // run may race each other to the counter, so only timers 5 ms apart
    // are compared.
    for (procs, policy, gap) in [
        (1, goro::Policy::default(), 1),
        (1, goro::Policy::legacy(), 1),
        (2, global, 5),
    ] {
        within(LIMIT, "ordered timers", move || {
            let rt = goro::Runtime::builder()
                .procs(procs)
                .policy(policy)
                .build()
                .unwrap();
            let got = fire_positions(&rt);
            for (a, b) in got.iter().zip(got.iter().skip(gap)) {
                assert!(
                    a.1 < b.1,
                    "procs {procs}: the timer for {:?} woke its task after the one for {:?} ({} vs {})",
                    a.0,
                    b.0,
                    a.1,
                    b.1
                );
            }
        });
    }
}

#[test]
fn per_p_timers_never_fire_early() {
    within(LIMIT, "never early at procs 4", || {
        fire_positions(&rt(4)).len()
    });
}

#[test]
fn zero_and_past_durations_fire_at_once_and_huge_ones_never() {
    within(LIMIT, "edge durations", || {
        let rt = rt(1);
        rt.block_on(async {
            sleep(Duration::ZERO).await;
            sleep_until(Instant::now() - Duration::from_secs(5)).await;
            let t = Timer::new(Duration::ZERO);
            t.rx().recv().await.unwrap();
            // Far beyond Instant's range: saturates to never, no panic.
            let never = Timer::new(Duration::MAX);
            assert!(timeout(Duration::from_millis(5), never.rx().recv())
                .await
                .is_err());
            assert!(never.stop(), "a never-firing timer is armed until stopped");
            assert!(sleep(Duration::MAX).deadline().is_none());
            assert!(timeout(Duration::MAX, async { 3 }).await == Ok(3));
        });
    });
}

#[test]
#[should_panic(expected = "non-positive interval")]
fn ticker_with_zero_period_panics_like_go() {
    let rt = rt(1);
    rt.block_on(async {
        let _ = Ticker::new(Duration::ZERO);
    });
}

#[test]
#[should_panic(expected = "outside a goro runtime")]
fn sleep_outside_a_runtime_panics_with_a_clear_message() {
    drop(sleep(Duration::from_millis(1)));
}

#[test]
fn stop_reports_whether_it_prevented_the_fire_and_callbacks_run_at_most_once() {
    within(LIMIT, "stop/fire races", || {
        let rt = rt(2);
        let fired = Arc::new(AtomicUsize::new(0));
        let prevented = Arc::new(AtomicUsize::new(0));
        let twice = Arc::new(AtomicUsize::new(0));
        rt.block_on(async {
            for i in 0..2000u64 {
                let (f, tw) = (fired.clone(), twice.clone());
                let once = std::sync::atomic::AtomicBool::new(false);
                // Deadlines around "now" so stop races the firing P.
                let t = after_func(Duration::from_micros(i % 50), move || {
                    if once.swap(true, Ordering::SeqCst) {
                        tw.fetch_add(1, Ordering::SeqCst);
                    }
                    f.fetch_add(1, Ordering::SeqCst);
                });
                if i % 3 == 0 {
                    goro::yield_now().await;
                }
                if t.stop() {
                    prevented.fetch_add(1, Ordering::SeqCst);
                }
                assert!(!t.stop(), "a second stop never reports success");
            }
        });
        // Every timer either fired exactly once or was prevented: wait for
        // the fired callbacks (they run as tasks) to be counted.
        support::wait_until(
            Duration::from_secs(30),
            "callbacks of unprevented timers ran",
            || fired.load(Ordering::SeqCst) + prevented.load(Ordering::SeqCst) == 2000,
        );
        assert_eq!(twice.load(Ordering::SeqCst), 0, "a callback ran twice");
    });
}

#[test]
fn reset_moves_a_timer_and_no_stale_value_arrives_after_it() {
    within(LIMIT, "reset", || {
        let rt = rt(2);
        rt.block_on(async {
            let t = Timer::new(Duration::from_millis(1));
            // Past the deadline (sleeps never end early): the timer is due,
            // fired or not. Go 1.23+: a value that was never received
            // counts as pending (Reset and Stop return true, and the value
            // is discarded).
            sleep(Duration::from_millis(5)).await;
            assert!(
                t.reset(Duration::from_secs(3600)),
                "undelivered value is pending"
            );
            // Go 1.23: the buffered value from before reset is gone.
            assert!(t.rx().try_recv().is_err(), "stale value after reset");
            // The deadline is taken before the reset computes its own, so
            // the timer's (later by the call's length) may not precede it:
            // goro's clock is `Instant`'s, exactly (`sched/timer/clock.rs`).
            let deadline = Instant::now() + Duration::from_millis(2);
            assert!(t.reset(Duration::from_millis(2)), "armed for an hour");
            let at = t.rx().recv().await.unwrap();
            let now = Instant::now();
            assert!(
                at >= deadline && now >= deadline,
                "a 2 ms reset fired early: value {:?}, received {:?} before the deadline",
                deadline.saturating_duration_since(at),
                deadline.saturating_duration_since(now)
            );
            // Reset later (lazy path) then earlier (new entry).
            t.reset(Duration::from_millis(1));
            t.reset(Duration::from_secs(3600));
            assert!(
                timeout(Duration::from_millis(20), t.rx().recv())
                    .await
                    .is_err(),
                "reset to later took effect"
            );
            t.reset(Duration::from_millis(1));
            t.rx().recv().await.unwrap();
            assert!(!t.stop(), "stop after the value was received reports false");
        });
    });
}

#[test]
fn ticker_drops_ticks_for_a_slow_reader() {
    within(LIMIT, "ticker", || {
        let rt = rt(1);
        rt.block_on(async {
            let t = Ticker::new(Duration::from_millis(1));
            std::thread::sleep(Duration::from_millis(30)); // a slow reader (blocks the P on purpose)
            sleep(Duration::from_millis(5)).await;
            // About 35 ticks came due; the channel holds one. A new tick may
            // land while we drain if the drain itself takes a period (a
            // preempted test thread, valgrind): allow one per period spent.
            let drain = std::time::Instant::now();
            let mut n = 0;
            while t.rx().try_recv().is_ok() {
                n += 1;
            }
            let periods = drain.elapsed().as_millis() as usize;
            assert!(
                n >= 1 && n <= 1 + periods,
                "the channel holds one tick, the rest are dropped: got {n} in a drain of {periods} ms"
            );
            t.stop();
            assert!(t.rx().try_recv().is_err());
            assert!(
                timeout(Duration::from_millis(10), t.rx().recv())
                    .await
                    .is_err(),
                "no tick after stop"
            );
            t.reset(Duration::from_millis(1));
            t.rx().recv().await.unwrap();
        });
    });
}

#[test]
fn four_hundred_thousand_live_timers_with_random_stop_and_reset() {
    within(Duration::from_secs(120), "400k timers", || {
        let rt = rt(2);
        let fired = Arc::new(AtomicUsize::new(0));
        let stops = rt.block_on(async {
            let mut timers = Vec::with_capacity(400_000);
            let mut x: u64 = 0x9E3779B97F4A7C15;
            for _ in 0..400_000 {
                let f = fired.clone();
                timers.push(after_func(Duration::from_secs(3600), move || {
                    f.fetch_add(1, Ordering::Relaxed);
                }));
            }
            let mut stopped = 0;
            // Stopped here and not among the 1000 re-armed below.
            let mut stopped_for_good = 0;
            for (i, t) in timers.iter().enumerate() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                match x % 4 {
                    0 => {
                        let was = t.stop();
                        assert!(
                            was,
                            "timer {i}: an armed timer is pending at its first stop"
                        );
                        stopped += 1;
                        stopped_for_good += usize::from(i >= 1000);
                    }
                    1 => {
                        t.reset(Duration::from_secs(7200));
                    }
                    2 => {
                        t.reset(Duration::from_secs(1800));
                    }
                    _ => {}
                }
            }
            assert!(stopped > 90_000, "about a quarter stopped, got {stopped}");
            // Reset a sample to fire now: exactly those fire.
            for t in timers.iter().take(1000) {
                t.reset(Duration::from_millis(1));
            }
            support::wait_until(
                Duration::from_secs(30),
                "1000 re-armed timers fired",
                || fired.load(Ordering::SeqCst) >= 1000,
            );
            assert_eq!(
                fired.load(Ordering::SeqCst),
                1000,
                "only the re-armed timers fired"
            );
            // Still armed: all but the stopped ones and the 1000 that fired.
            let mut stopped_at_end = 0;
            for t in &timers {
                stopped_at_end += usize::from(t.stop());
            }
            assert_eq!(
                stopped_at_end,
                400_000 - 1000 - stopped_for_good,
                "every timer still armed is pending at the end, and no other"
            );
            stopped + stopped_at_end
        });
        let s = rt.stats();
        // The runtime counted each successful stop once: no stop was lost
        // or counted twice, and none of the 1000 fired timers was stopped.
        assert_eq!(s.timers_stopped as usize, stops, "{s:?}");
    });
}

#[test]
fn timers_armed_from_threads_without_a_p_fire() {
    within(LIMIT, "timers from block_on threads", || {
        let rt = Arc::new(rt(2));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let rt = rt.clone();
                std::thread::spawn(move || {
                    rt.block_on(async {
                        let t0 = Instant::now();
                        sleep(Duration::from_millis(3)).await;
                        assert!(t0.elapsed() >= Duration::from_millis(3));
                        Timer::new(Duration::from_millis(1))
                            .rx()
                            .recv()
                            .await
                            .unwrap();
                    })
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
    });
}

/// How late past its deadline a timer of an idle runtime may fire in
/// these tests. Nothing in goro adds to that lateness: with every P idle,
/// one thread parks as the timer sleeper with a timeout of exactly the
/// earliest deadline (`park_as_timer_sleeper`, `sched/timer/check.rs`), and the
/// monitor, whose own rounds are 10 ms apart while some P is busy, sleeps
/// without a timeout; so the wake is the kernel's (its timer slack and a
/// thread switch, well under a millisecond natively). The bound is not a
/// speed claim: 1 s leaves room for memcheck (20-50x slower,
/// scripts/valgrind.sh) and a loaded CI, and still fails a sleeper that
/// waited for some other, later wake. The tests check, beside it, that the
/// sleeper's counter moved: the wake was its.
const IDLE_TIMER_SLACK: Duration = Duration::from_secs(1);

#[test]
fn a_sleeping_runtime_wakes_for_its_timer() {
    within(LIMIT, "idle runtime timer", || {
        let rt = rt(4);
        // A task sleeps: once its P has gone idle, the only thing that can
        // run it is the timer sleeper thread.
        let wakes = rt.stats().timer_sleeper_wakes;
        let h = rt.spawn(async {
            let t0 = Instant::now();
            sleep(Duration::from_millis(50)).await;
            t0.elapsed()
        });
        let took = rt.block_on(h).unwrap();
        assert!(took >= Duration::from_millis(50), "early: {took:?}");
        assert!(
            took < Duration::from_millis(50) + IDLE_TIMER_SLACK,
            "woke {:?} past the deadline (IDLE_TIMER_SLACK says why this is a bug)",
            took - Duration::from_millis(50)
        );
        assert!(
            rt.stats().timer_sleeper_wakes > wakes,
            "the timer sleeper never woke"
        );
        // A timer armed while everything sleeps.
        support::wait_until(Duration::from_secs(10), "every P idle", || {
            rt.schedtrace().contains("idleprocs=4")
        });
        let wakes = rt.stats().timer_sleeper_wakes;
        let t0 = Instant::now();
        rt.block_on(async { sleep(Duration::from_millis(30)).await });
        let took = t0.elapsed();
        assert!(
            took >= Duration::from_millis(30)
                && took < Duration::from_millis(30) + IDLE_TIMER_SLACK,
            "{took:?} for a 30 ms sleep (IDLE_TIMER_SLACK says why a late one is a bug)"
        );
        assert!(
            rt.stats().timer_sleeper_wakes > wakes,
            "the timer sleeper never woke"
        );
    });
}

#[test]
fn timers_survive_a_busy_p_through_thieves_and_the_monitor() {
    within(LIMIT, "timer on a stuck P", || {
        let rt = rt(2);
        rt.block_on(async {
            goro::spawn(async {
                let f = Arc::new(AtomicUsize::new(0));
                let f2 = f.clone();
                // Armed on this P; then this poll refuses to return.
                let _t = after_func(Duration::from_millis(5), move || {
                    f2.store(1, Ordering::SeqCst);
                });
                support::wait_until(
                    Duration::from_secs(30),
                    "the timer ran while its P was stuck",
                    || f.load(Ordering::SeqCst) == 1,
                );
            })
            .await
            .unwrap();
        });
    });
}

#[test]
fn dropping_the_runtime_drops_armed_timers() {
    within(LIMIT, "shutdown with timers", || {
        struct D(Arc<AtomicUsize>);
        impl Drop for D {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let dropped = Arc::new(AtomicUsize::new(0));
        let rt = rt(2);
        let d = dropped.clone();
        rt.block_on(async move {
            for _ in 0..100 {
                let g = D(d.clone());
                let _ = after_func(Duration::from_secs(3600), move || {
                    let _ = &g;
                });
                let g = D(d.clone());
                goro::spawn(async move {
                    let _g = g;
                    sleep(Duration::from_secs(3600)).await;
                });
            }
            goro::yield_now().await;
        });
        drop(rt);
        assert_eq!(
            dropped.load(Ordering::SeqCst),
            200,
            "timer callbacks and sleeping tasks dropped"
        );
    });
}

/// A sleep reuses the timer a finished sleep or timeout left behind (the
/// P's spare, `sched/timer/check.rs`), armed for another deadline: later (the
/// old entry moves when it surfaces) or earlier (a new entry). Either way
/// the sleep fires on time and never early, and the old timeout's task is
/// not woken for it.
#[test]
fn sleeps_on_a_reused_timer_fire_on_time() {
    within(Duration::from_secs(30), "reused sleep timers", || {
        let rt = rt(1);
        rt.block_on(async {
            for round in 0..200u32 {
                // Leaves an armed spare due in an hour...
                let r = timeout(Duration::from_secs(3600), goro::yield_now()).await;
                assert!(r.is_ok(), "round {round}: yield_now beat the hour");
                // ...which an earlier sleep takes over.
                let d = Duration::from_micros(200 + u64::from(round % 7) * 100);
                let t0 = Instant::now();
                sleep(d).await;
                assert!(t0.elapsed() >= d, "round {round}: woke early");
                // A later one, from a spare due sooner than it.
                let r = timeout(Duration::from_micros(100), goro::yield_now()).await;
                assert!(r.is_ok(), "round {round}: yield_now beat 100 µs");
                let t0 = Instant::now();
                sleep(Duration::from_millis(1)).await;
                assert!(
                    t0.elapsed() >= Duration::from_millis(1),
                    "round {round}: woke early"
                );
            }
        });
        let s = rt.stats();
        assert!(
            s.timers_fired >= 400,
            "every sleep fired from a heap: {s:?}"
        );
    });
}

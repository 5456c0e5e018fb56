//! Behaviour of `goro::sync::Mutex`: exclusion, Go's normal and starvation
//! modes, cancellation. Single-threaded tests drive futures by hand so that
//! every interleaving they check is exact.
#![cfg(not(loom))]

mod support;

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

use goro::sync::Mutex;
use support::sync::{spawn, yield_now, Probe};

/// Waits past Go's 1 ms starvation threshold. The waiter's age is the input
/// of the tests that use it (time only grows, so this is not a race), not a
/// pause for another thread to "settle".
fn outwait_starvation_threshold(since: Instant) {
    std::thread::sleep(Duration::from_millis(3));
    assert!(since.elapsed() > Duration::from_millis(1));
}

/// A counter with no synchronisation of its own: only the mutex keeps its
/// increments from being lost.
struct Racy(UnsafeCell<u64>);
// SAFETY: test-only; every access happens under the `Mutex<()>` beside it.
unsafe impl Sync for Racy {}

#[test]
fn mutex_excludes_writers_of_a_plain_counter_across_threads() {
    const THREADS: usize = 8;
    const ITERS: u64 = 2_000;
    let m = Arc::new(Mutex::new(()));
    let counter = Arc::new(Racy(UnsafeCell::new(0)));
    let inside = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let (m, counter, inside) = (m.clone(), counter.clone(), inside.clone());
            spawn(format!("locker {t}"), move || {
                for i in 0..ITERS {
                    // Mix the three ways in.
                    let g = match (t + i as usize) % 3 {
                        0 => m.lock_blocking(),
                        1 => futures::executor::block_on(m.lock()),
                        _ => loop {
                            if let Some(g) = m.try_lock() {
                                break g;
                            }
                            std::hint::spin_loop();
                        },
                    };
                    assert!(
                        !inside.swap(true, SeqCst),
                        "two guards inside the critical section"
                    );
                    // SAFETY: under the mutex.
                    unsafe {
                        let v = *counter.0.get();
                        std::hint::black_box(v);
                        *counter.0.get() = v + 1;
                    }
                    inside.store(false, SeqCst);
                    drop(g);
                }
            })
        })
        .collect();
    workers.into_iter().for_each(|w| w.join());
    // SAFETY: all threads joined.
    let total = unsafe { *counter.0.get() };
    assert_eq!(
        total,
        THREADS as u64 * ITERS,
        "increments were lost: the mutex let two owners in"
    );
}

#[test]
fn tasks_holding_the_lock_across_await_exclude_each_other() {
    const THREADS: usize = 3;
    const TASKS: usize = 4;
    const ITERS: usize = 300;
    let m = Arc::new(Mutex::new(0usize));
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let m = m.clone();
            spawn(format!("executor {t}"), move || {
                let mut pool = futures::executor::LocalPool::new();
                let spawner = pool.spawner();
                for _ in 0..TASKS {
                    let m = m.clone();
                    futures::task::LocalSpawnExt::spawn_local(&spawner, async move {
                        for i in 0..ITERS {
                            let mut g = m.lock().await;
                            let v = *g;
                            if i % 7 == 0 {
                                yield_now().await; // hold it across a suspension
                            }
                            *g = v + 1;
                        }
                    })
                    .unwrap();
                }
                pool.run();
            })
        })
        .collect();
    workers.into_iter().for_each(|w| w.join());
    assert_eq!(*m.lock_blocking(), THREADS * TASKS * ITERS);
}

#[test]
fn try_lock_fails_while_held_and_succeeds_after_unlock() {
    let m = Mutex::new(1);
    let g = m.try_lock().expect("a fresh mutex is free");
    assert!(m.try_lock().is_none(), "try_lock succeeded on a held mutex");
    drop(g);
    assert_eq!(*m.try_lock().expect("free after unlock"), 1);
}

#[test]
fn queued_waiter_is_woken_by_unlock_and_then_owns_the_lock() {
    let m = Mutex::new(0);
    let g = m.lock_blocking();
    let mut w = Probe::new(m.lock());
    w.pending("the mutex is held");
    assert_eq!(w.wakes(), 0);
    drop(g);
    assert_eq!(w.wakes(), 1, "unlock must wake the queued waiter");
    let mut g = w.ready("woken waiter takes the free mutex");
    *g += 1;
    assert!(m.try_lock().is_none(), "the woken waiter holds it");
    drop(g);
}

#[test]
fn normal_mode_lets_an_arriving_locker_barge_past_a_woken_waiter() {
    let m = Mutex::new(());
    let g = m.lock_blocking();
    let mut w = Probe::new(m.lock());
    w.pending("held");
    drop(g); // wakes `w`, which has not run yet
    let barger = m.try_lock();
    assert!(
        barger.is_some(),
        "in normal mode a running locker may take the mutex from a woken waiter"
    );
    w.pending("the woken waiter lost and queues again");
    drop(barger);
    assert_eq!(
        w.wakes(),
        2,
        "the requeued waiter is woken by the next unlock"
    );
    drop(w.ready("second wake-up"));
}

#[test]
fn woken_waiter_that_lost_requeues_ahead_of_later_waiters() {
    let m = Mutex::new(());
    let g = m.lock_blocking();
    let mut first = Probe::new(m.lock());
    first.pending("held");
    let mut second = Probe::new(m.lock());
    second.pending("held");
    drop(g);
    assert_eq!(
        (first.wakes(), second.wakes()),
        (1, 0),
        "unlock wakes the head only"
    );
    let barger = m.try_lock().expect("barging in normal mode");
    first.pending("lost to the barger, requeued");
    drop(barger);
    assert_eq!(
        (first.wakes(), second.wakes()),
        (2, 0),
        "a waiter that lost goes back to the front (Go's queueLifo)"
    );
    drop(first.ready("front waiter"));
    assert_eq!(second.wakes(), 1);
    drop(second.ready("then the next"));
}

/// Drives the mutex into starvation mode: the head waiter has waited more
/// than 1 ms and loses a race to a barger. Returns with the barger's guard
/// held and `head` queued at the front.
fn enter_starvation<'a>(
    m: &'a Mutex<()>,
    head: &mut Probe<goro::sync::LockFuture<'a, ()>>,
) -> goro::sync::MutexGuard<'a, ()> {
    let g = m.lock_blocking();
    let queued_at = Instant::now();
    head.pending("held");
    outwait_starvation_threshold(queued_at);
    drop(g); // wakes `head` in normal mode
    let barger = m.try_lock().expect("normal mode still lets a barger in");
    head.pending("lost after waiting > 1 ms: switches the mutex to starvation mode");
    barger
}

#[test]
fn unlock_in_starvation_mode_hands_the_lock_to_the_head_waiter() {
    let m = Mutex::new(());
    let mut head = Probe::new(m.lock());
    let barger = enter_starvation(&m, &mut head);
    let mut late = Probe::new(m.lock());
    late.pending("in starvation mode arrivals queue at the tail");
    drop(barger);
    assert_eq!(head.wakes(), 2);
    assert!(
        m.try_lock().is_none(),
        "in starvation mode unlock hands the mutex to the head waiter: nobody may barge"
    );
    let g = head.ready("the head owns the mutex");
    assert_eq!(late.wakes(), 0);
    drop(g);
    assert!(m.try_lock().is_none(), "handed on to the last waiter");
    drop(late.ready("last waiter"));
    assert!(
        m.try_lock().is_some(),
        "the last handoff returns the mutex to normal mode"
    );
}

#[test]
fn starving_waiter_gets_lock_by_handoff_while_others_hammer_it() {
    const HAMMERS: usize = 3;
    let m = Arc::new(Mutex::new(0u64));
    let stop = Arc::new(AtomicBool::new(false));
    let started = Arc::new(AtomicUsize::new(0));
    let hammers: Vec<_> = (0..HAMMERS)
        .map(|i| {
            let (m, stop, started) = (m.clone(), stop.clone(), started.clone());
            spawn(format!("hammer {i}"), move || {
                started.fetch_add(1, SeqCst);
                while !stop.load(SeqCst) {
                    // Relock at once: a woken waiter competes with this loop.
                    *m.lock_blocking() += 1;
                }
            })
        })
        .collect();
    let victim = {
        let (m, started) = (m.clone(), started.clone());
        spawn("victim", move || {
            while started.load(SeqCst) < HAMMERS {
                std::thread::yield_now();
            }
            for _ in 0..20 {
                drop(futures::executor::block_on(m.lock()));
            }
        })
    };
    victim.join(); // must get the lock 20 times despite the hammering
    stop.store(true, SeqCst);
    hammers.into_iter().for_each(|h| h.join());
}

#[test]
fn dropped_lock_future_leaves_no_waiter() {
    let m = Mutex::new(());
    let g = m.lock_blocking();
    let mut w = Probe::new(m.lock());
    w.pending("held");
    drop(w);
    drop(g); // must not try to wake the departed waiter
    let g = m.try_lock().expect("free: no waiter holds or is owed it");
    let mut next = Probe::new(m.lock());
    next.pending("held again");
    drop(g);
    assert_eq!(next.wakes(), 1, "a later waiter is still woken normally");
    drop(next.ready("woken"));
}

#[test]
fn dropped_woken_waiter_passes_the_wake_up_on() {
    let m = Mutex::new(());
    let g = m.lock_blocking();
    let mut first = Probe::new(m.lock());
    first.pending("held");
    let mut second = Probe::new(m.lock());
    second.pending("held");
    drop(g);
    assert_eq!((first.wakes(), second.wakes()), (1, 0));
    drop(first); // woken but never ran
    assert_eq!(
        second.wakes(),
        1,
        "the wake-up of a dropped waiter must go to the next one"
    );
    drop(second.ready("next waiter takes the free mutex"));
}

#[test]
fn lock_handed_to_a_dropped_waiter_is_passed_to_the_next() {
    let m = Mutex::new(());
    let mut head = Probe::new(m.lock());
    let barger = enter_starvation(&m, &mut head);
    let mut next = Probe::new(m.lock());
    next.pending("starvation mode: queue at the tail");
    drop(barger); // hands the mutex to `head`
    drop(head); // ...which is cancelled before it runs
    assert_eq!(
        next.wakes(),
        1,
        "the handoff must move on to the next waiter"
    );
    assert!(m.try_lock().is_none(), "still handed off, not up for grabs");
    drop(next.ready("received the handoff"));
    assert!(m.try_lock().is_some(), "free once the last owner unlocks");
}

#[test]
fn lock_handed_to_the_last_dropped_waiter_is_released() {
    let m = Mutex::new(());
    let mut head = Probe::new(m.lock());
    let barger = enter_starvation(&m, &mut head);
    drop(barger); // hands the mutex to `head`, the only waiter
    drop(head);
    assert!(
        m.try_lock().is_some(),
        "the mutex was leaked to a dropped waiter"
    );
}

#[test]
fn dropping_the_last_queued_waiter_ends_starvation_mode() {
    let m = Mutex::new(());
    let mut head = Probe::new(m.lock());
    let barger = enter_starvation(&m, &mut head);
    drop(head); // still queued (not handed anything) when dropped
    drop(barger);
    assert!(
        m.try_lock().is_some(),
        "no waiter is left, so nobody may be owed the mutex"
    );
}

#[test]
fn lock_future_and_guard_are_send_for_send_data() {
    fn assert_send<T: Send>(_: &T) {}
    let m = Mutex::new(vec![1]);
    let fut = async {
        let mut g = m.lock().await;
        yield_now().await;
        g.push(2);
    };
    assert_send(&fut);
    futures::executor::block_on(fut);
    assert_eq!(m.into_inner(), [1, 2]);
}

#[test]
fn get_mut_and_into_inner_need_no_locking() {
    let mut m = Mutex::new(String::from("a"));
    m.get_mut().push('b');
    assert_eq!(format!("{m:?}"), r#"Mutex { data: "ab", .. }"#);
    let g = m.lock_blocking();
    assert_eq!(format!("{m:?}"), "Mutex { data: <locked>, .. }");
    drop(g);
    assert_eq!(m.into_inner(), "ab");
}

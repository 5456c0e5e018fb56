//! Behaviour of `goro::sync::Semaphore`: permits, FIFO fairness,
//! cancellation.
#![cfg(not(loom))]

mod support;

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;

use goro::sync::Semaphore;
use support::sync::{spawn, Probe};

#[test]
fn permits_are_returned_when_dropped() {
    let sem = Semaphore::new(3);
    let a = sem.try_acquire_many(2).expect("3 available");
    assert_eq!(sem.available_permits(), 1);
    let b = Probe::new(sem.acquire()).ready("1 left");
    assert_eq!(sem.available_permits(), 0);
    drop((a, b));
    assert_eq!(sem.available_permits(), 3);
}

#[test]
fn acquire_of_zero_permits_completes_at_once() {
    let sem = Semaphore::new(0);
    let p = Probe::new(sem.acquire_many(0)).ready("nothing to wait for");
    assert_eq!(p.num_permits(), 0);
}

#[test]
fn large_waiter_at_the_head_is_not_overtaken_by_small_ones() {
    let sem = Semaphore::new(2);
    let a = sem.try_acquire().unwrap();
    let b = sem.try_acquire().unwrap();
    let mut big = Probe::new(sem.acquire_many(2));
    big.pending("no permits");
    let mut small = Probe::new(sem.acquire());
    small.pending("no permits");
    drop(a);
    assert_eq!(
        (big.wakes(), small.wakes()),
        (0, 0),
        "one free permit goes to the head (which needs two), not to the small waiter behind it"
    );
    assert!(
        sem.try_acquire().is_none(),
        "try_acquire must not barge past waiters"
    );
    drop(b);
    assert_eq!((big.wakes(), small.wakes()), (1, 0));
    let p = big.ready("the head has both permits");
    small.pending("still behind");
    drop(p);
    assert_eq!(small.wakes(), 1);
    drop(small.ready("served after the head"));
}

#[test]
fn add_permits_serves_waiters_in_arrival_order() {
    let sem = Semaphore::new(0);
    let mut first = Probe::new(sem.acquire());
    let mut second = Probe::new(sem.acquire());
    first.pending("empty");
    second.pending("empty");
    sem.add_permits(1);
    assert_eq!((first.wakes(), second.wakes()), (1, 0), "FIFO");
    sem.add_permits(1);
    assert_eq!(second.wakes(), 1);
    drop((first.ready("first"), second.ready("second")));
    assert_eq!(sem.available_permits(), 2);
}

#[test]
fn dropped_acquire_hands_its_partial_permits_to_the_next_waiter() {
    let sem = Semaphore::new(3);
    let held = sem.try_acquire_many(2).unwrap();
    let mut big = Probe::new(sem.acquire_many(3));
    big.pending("takes the free permit and waits for two more");
    assert_eq!(sem.available_permits(), 0);
    let mut small = Probe::new(sem.acquire());
    small.pending("behind the big one");
    drop(big);
    assert_eq!(
        small.wakes(),
        1,
        "the permit the cancelled waiter held must reach the next one"
    );
    let p = small.ready("served");
    drop((p, held));
    assert_eq!(sem.available_permits(), 3, "no permit was lost");
}

#[test]
fn dropped_acquire_that_was_already_served_returns_its_permits() {
    let sem = Semaphore::new(1);
    let held = sem.try_acquire().unwrap();
    let mut w = Probe::new(sem.acquire());
    w.pending("empty");
    drop(held);
    assert_eq!(w.wakes(), 1);
    drop(w); // served but never ran
    assert_eq!(
        sem.available_permits(),
        1,
        "permits given to a dropped waiter must come back"
    );
}

#[test]
fn dropped_acquire_leaves_no_waiter() {
    let sem = Semaphore::new(0);
    let mut w = Probe::new(sem.acquire());
    w.pending("empty");
    drop(w);
    sem.add_permits(1);
    assert!(
        sem.try_acquire().is_some(),
        "the permit must not be held for a departed waiter"
    );
}

#[test]
fn forgotten_permit_shrinks_the_semaphore() {
    let sem = Semaphore::new(2);
    sem.try_acquire().unwrap().forget();
    assert_eq!(sem.available_permits(), 1);
}

#[test]
#[should_panic(expected = "exceeds Semaphore::MAX_PERMITS")]
fn acquiring_more_than_max_permits_panics() {
    let sem = Semaphore::new(0);
    let _never = sem.acquire_many(Semaphore::MAX_PERMITS + 1);
}

#[test]
#[should_panic(expected = "exceeds Semaphore::MAX_PERMITS")]
fn adding_past_max_permits_panics() {
    let sem = Semaphore::new(Semaphore::MAX_PERMITS);
    sem.add_permits(1);
}

#[test]
fn semaphore_bounds_concurrency_across_threads() {
    const PERMITS: usize = 3;
    const THREADS: usize = 8;
    const ITERS: usize = 500;
    let sem = Arc::new(Semaphore::new(PERMITS));
    let inside = Arc::new(AtomicUsize::new(0));
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let (sem, inside) = (sem.clone(), inside.clone());
            spawn(format!("worker {t}"), move || {
                for i in 0..ITERS {
                    let n = 1 + (t + i) % 2;
                    let p = if i % 2 == 0 {
                        sem.acquire_many_blocking(n)
                    } else {
                        futures::executor::block_on(sem.acquire_many(n))
                    };
                    let now = inside.fetch_add(n, SeqCst) + n;
                    assert!(now <= PERMITS, "{now} permits in use, only {PERMITS} exist");
                    inside.fetch_sub(n, SeqCst);
                    drop(p);
                }
            })
        })
        .collect();
    workers.into_iter().for_each(|w| w.join());
    assert_eq!(
        sem.available_permits(),
        PERMITS,
        "permits were lost or duplicated"
    );
}

//! loom models of the channel lock (`lock.rs`): mutual exclusion, and no
//! waiter left asleep on a free lock, with a holder, a spinner and a
//! sleeper at once.
//!
//! Run with:
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p goro --lib --release loom_chan_lock`
//!
//! The value behind the lock is a loom cell, so loom reports any two
//! accesses the lock fails to order; a lost wake-up leaves a thread
//! asleep forever, which loom reports as a deadlock. Under loom the spinner
//! spins one round, so every execution also reaches the sleep path. Each
//! model's planted bug and what catches it:
//! `bench/results/2026-11-27-loom-chan-lock-plants.txt`.

use super::lock::ChanLock;
use crate::loom::thread;
use std::sync::Arc;

/// Three threads take the lock once each: one holds it, one spins, one
/// sleeps, in every order loom finds. Every increment lands, and nobody is
/// left asleep.
#[test]
fn loom_chan_lock_three_threads_exclude_and_all_finish() {
    loom::model(|| {
        let lock = Arc::new(ChanLock::new(0u32));
        let others: Vec<_> = (0..2)
            .map(|_| {
                let lock = lock.clone();
                thread::spawn(move || *lock.lock() += 1)
            })
            .collect();
        *lock.lock() += 1;
        for t in others {
            t.join().unwrap();
        }
        assert_eq!(*lock.lock(), 3, "an increment under the lock was lost");
    });
}

/// Two threads take the lock twice each: each may sleep, be woken, take
/// the lock with `SLEEPING` set again and sleep once more.
#[test]
fn loom_chan_lock_a_woken_thread_passes_the_wake_on() {
    loom::model(|| {
        let lock = Arc::new(ChanLock::new(0u32));
        let other = {
            let lock = lock.clone();
            thread::spawn(move || {
                for _ in 0..2 {
                    *lock.lock() += 1;
                }
            })
        };
        for _ in 0..2 {
            *lock.lock() += 1;
        }
        other.join().unwrap();
        assert_eq!(*lock.lock(), 4, "an increment under the lock was lost");
    });
}

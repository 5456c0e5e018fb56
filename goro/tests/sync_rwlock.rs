//! Behaviour of `goro::sync::RwLock`: sharing, exclusion, writer preference,
//! cancellation.
#![cfg(not(loom))]

mod support;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;

use goro::sync::RwLock;
use support::sync::{spawn, Probe};

#[test]
fn readers_share_the_lock() {
    let lock = RwLock::new(1);
    let a = lock.try_read().expect("free");
    let mut b = Probe::new(lock.read());
    let b = b.ready("a second reader enters beside the first");
    assert_eq!(*a + *b, 2);
    assert!(
        lock.try_write().is_none(),
        "a writer must wait for the readers"
    );
}

#[test]
fn writer_excludes_readers_and_writers() {
    let lock = RwLock::new(0);
    let w = lock.try_write().expect("free");
    assert!(lock.try_read().is_none());
    assert!(lock.try_write().is_none());
    let mut r = Probe::new(lock.read());
    r.pending("a writer holds the lock");
    drop(w);
    assert_eq!(r.wakes(), 1);
    drop(r.ready("writer gone"));
}

#[test]
fn waiting_writer_blocks_new_readers() {
    let lock = RwLock::new(());
    let r1 = lock.read_blocking();
    let mut w = Probe::new(lock.write());
    w.pending("a reader holds the lock");
    assert!(
        lock.try_read().is_none(),
        "a queued writer must block new readers (writer preference)"
    );
    let mut r2 = Probe::new(lock.read());
    r2.pending("new readers queue behind the waiting writer");
    drop(r1);
    assert_eq!(
        (w.wakes(), r2.wakes()),
        (1, 0),
        "the last reader out admits the writer, not the new reader"
    );
    let g = w.ready("writer");
    drop(g);
    assert_eq!(r2.wakes(), 1);
    drop(r2.ready("the reader behind the writer"));
}

#[test]
fn readers_queued_behind_a_writer_are_admitted_together_before_the_next_writer() {
    let lock = RwLock::new(());
    let w1 = lock.write_blocking();
    let mut r1 = Probe::new(lock.read());
    let mut r2 = Probe::new(lock.read());
    let mut w2 = Probe::new(lock.write());
    r1.pending("writer holds");
    r2.pending("writer holds");
    w2.pending("writer holds");
    drop(w1);
    assert_eq!(
        (r1.wakes(), r2.wakes(), w2.wakes()),
        (1, 1, 0),
        "one unlock admits every reader queued before the next writer"
    );
    let (g1, g2) = (r1.ready("reader 1"), r2.ready("reader 2"));
    drop(g1);
    assert_eq!(w2.wakes(), 0, "the writer waits for every reader");
    drop(g2);
    assert_eq!(w2.wakes(), 1);
    drop(w2.ready("writer after the readers"));
}

#[test]
fn dropped_write_future_lets_the_readers_behind_it_in() {
    let lock = RwLock::new(());
    let r1 = lock.read_blocking();
    let mut w = Probe::new(lock.write());
    w.pending("a reader holds the lock");
    let mut r2 = Probe::new(lock.read());
    r2.pending("behind the writer");
    drop(w); // cancelled: gives back what it had collected
    assert_eq!(
        r2.wakes(),
        1,
        "the reader behind a cancelled writer must be admitted"
    );
    let g2 = r2.ready("reader");
    drop((r1, g2));
    assert!(lock.try_write().is_some(), "no permit was lost");
}

#[test]
fn dropped_read_future_leaves_no_waiter() {
    let lock = RwLock::new(());
    let w = lock.write_blocking();
    let mut r = Probe::new(lock.read());
    r.pending("writer holds");
    drop(r);
    drop(w);
    assert!(
        lock.try_write().is_some(),
        "a cancelled reader must not keep any permit"
    );
}

#[test]
fn writer_is_not_starved_by_a_stream_of_readers() {
    const READERS: usize = 3;
    let lock = Arc::new(RwLock::new(0u64));
    let stop = Arc::new(AtomicBool::new(false));
    let started = Arc::new(AtomicUsize::new(0));
    let readers: Vec<_> = (0..READERS)
        .map(|i| {
            let (lock, stop, started) = (lock.clone(), stop.clone(), started.clone());
            spawn(format!("reader {i}"), move || {
                started.fetch_add(1, SeqCst);
                let mut n = 0u64;
                while !stop.load(SeqCst) {
                    n += 1;
                    // The readers' guards overlap, so without writer
                    // preference there would almost always be one inside.
                    // (One guard per thread: a second read while a writer
                    // waits would deadlock, as in Go.)
                    let g = if matches!(n % 2, 0) {
                        lock.read_blocking()
                    } else {
                        futures::executor::block_on(lock.read())
                    };
                    for _ in 0..100 {
                        std::hint::black_box(*g);
                    }
                }
            })
        })
        .collect();
    let writer = {
        let (lock, started) = (lock.clone(), started.clone());
        spawn("writer", move || {
            while started.load(SeqCst) < READERS {
                std::thread::yield_now();
            }
            for _ in 0..20 {
                *lock.write_blocking() += 1;
            }
        })
    };
    writer.join();
    stop.store(true, SeqCst);
    readers.into_iter().for_each(|r| r.join());
    assert_eq!(*lock.read_blocking(), 20);
}

/// Every fourth operation of the worker threads below is a write.
fn is_write(thread: u64, i: u64) -> bool {
    matches!((thread + i) % 4, 0)
}

#[test]
fn readers_never_see_a_half_done_write_across_threads() {
    const THREADS: usize = 6;
    const ITERS: u64 = 1_000;
    let lock = Arc::new(RwLock::new((0u64, 0u64)));
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let lock = lock.clone();
            spawn(format!("worker {t}"), move || {
                for i in 0..ITERS {
                    if is_write(t as u64, i) {
                        let mut g = futures::executor::block_on(lock.write());
                        g.0 += 1;
                        std::hint::black_box(&*g);
                        g.1 += 1;
                    } else {
                        let g = lock.read_blocking();
                        assert_eq!(g.0, g.1, "a reader saw a write in progress");
                    }
                }
            })
        })
        .collect();
    workers.into_iter().for_each(|w| w.join());
    let g = lock.read_blocking();
    assert_eq!(g.0, g.1);
    let writes: u64 = (0..THREADS as u64)
        .map(|t| (0..ITERS).filter(|&i| is_write(t, i)).count() as u64)
        .sum();
    assert_eq!(g.0, writes, "a write was lost");
}

#[test]
fn get_mut_into_inner_and_debug() {
    let mut lock = RwLock::new(vec![1]);
    lock.get_mut().push(2);
    assert_eq!(format!("{lock:?}"), "RwLock { data: [1, 2], .. }");
    let w = lock.write_blocking();
    assert_eq!(format!("{lock:?}"), "RwLock { data: <locked>, .. }");
    drop(w);
    assert_eq!(lock.into_inner(), [1, 2]);
}

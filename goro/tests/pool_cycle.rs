//! `goro::sync::Pool` generations: what a cycle keeps and what it drops,
//! with the victim cache on and off, on a P and on threads without one;
//! dropping a pool; panics in `new`; the counters.
//!
//! Cycles rotate every pool in the process, so these tests run one at a
//! time (`serial`) and their runtimes' monitors never cycle on their own
//! (`pool_cycle` of an hour): every cycle here is a `pool_cycle()` call.
#![cfg(not(loom))]

mod common;
#[path = "pool_support.rs"]
mod support;

use common::{wait_until, within};
use goro::sync::{pool_cycle, Pool};
use goro::{Policy, Runtime};
use std::sync::Arc;
use std::time::Duration;
use support::{serial, Ledger, Tracked};

const LIMIT: Duration = Duration::from_secs(30);

fn runtime(procs: usize, victim: bool) -> Runtime {
    let mut policy = Policy::default();
    policy.pool_victim = victim;
    Runtime::builder()
        .procs(procs)
        .policy(policy)
        .pool_cycle(Duration::from_secs(3600))
        .build()
        .unwrap()
}

fn tracked_pool(ledger: &Arc<Ledger>) -> Arc<Pool<Tracked>> {
    let l = ledger.clone();
    Arc::new(Pool::new(move || l.make()))
}

/// Gets `n` values, marking each taken.
fn get_n(pool: &Pool<Tracked>, n: usize) -> Vec<Tracked> {
    (0..n).map(|_| pool.get().take()).collect()
}

fn put_all(pool: &Pool<Tracked>, vals: Vec<Tracked>) {
    for v in vals {
        pool.put(v.release());
    }
}

/// On a P (one P, so every task uses the same slot): values put survive one
/// cycle (from the victim: private slot and chain), and two cycles unused
/// drop them, each once. 100 values: the private slot plus a grown chain.
#[test]
fn victim_on_values_survive_one_cycle_and_are_dropped_by_the_second() {
    let _s = serial();
    let ledger = Ledger::new();
    let pool = tracked_pool(&ledger);
    let rt = runtime(1, true);
    let (p, l) = (pool.clone(), ledger.clone());
    within(LIMIT, "victim cycle test", move || {
        rt.block_on(async move {
            goro::spawn(async move {
                let vals = get_n(&p, 100);
                assert_eq!(l.made(), 100);
                put_all(&p, vals);
                pool_cycle();
                assert_eq!(l.dropped(), 0, "one cycle drops nothing");
                let back = get_n(&p, 100);
                assert_eq!(l.made(), 100, "all 100 came back from the victim cache");
                let mut ids: Vec<usize> = back.iter().map(|v| v.id).collect();
                ids.sort();
                assert_eq!(ids, (0..100).collect::<Vec<_>>());
                put_all(&p, back);
                pool_cycle();
                assert_eq!(
                    l.dropped(),
                    0,
                    "first cycle after the put moves them to the victim"
                );
                pool_cycle();
                assert_eq!(l.dropped(), 100, "second cycle drops them");
                assert!(l.all_dropped());
                let v = p.get().take();
                assert_eq!(l.made(), 101, "the pool is empty: get calls new");
                p.put(v.release());
            })
            .await
            .unwrap();
        });
    });
    drop(pool);
    assert!(
        ledger.all_dropped(),
        "dropping the pool dropped the last value"
    );
    assert_eq!(ledger.double_drops(), 0);
}

/// The same on a thread without a P (the lists).
#[test]
fn victim_on_list_values_survive_one_cycle_and_are_dropped_by_the_second() {
    let _s = serial();
    let ledger = Ledger::new();
    let pool = tracked_pool(&ledger);
    let vals = get_n(&pool, 10);
    put_all(&pool, vals);
    pool_cycle();
    let back = get_n(&pool, 10);
    assert_eq!(ledger.made(), 10, "all 10 came back from the victim list");
    put_all(&pool, back);
    pool_cycle();
    assert_eq!(ledger.dropped(), 0);
    pool_cycle();
    assert_eq!(ledger.dropped(), 10);
    assert!(ledger.all_dropped());
    assert_eq!(ledger.double_drops(), 0);
}

/// Victim cache off (the seed's "before"): one cycle drops everything, on a
/// P and in the lists; `pool_cycle` inside a runtime uses its policy.
#[test]
fn victim_off_values_are_dropped_by_the_first_cycle() {
    let _s = serial();
    let ledger = Ledger::new();
    let pool = tracked_pool(&ledger);
    let rt = runtime(1, false);
    let (p, l) = (pool.clone(), ledger.clone());
    within(LIMIT, "victim off test", move || {
        rt.block_on(async move {
            // On the block_on thread (no P): the lists.
            put_all(&p, get_n(&p, 5));
            let p2 = p.clone();
            let l2 = l.clone();
            goro::spawn(async move {
                // The 5 list values are found after the (empty) P storage.
                put_all(&p2, get_n(&p2, 50));
                assert_eq!(l2.made(), 50);
            })
            .await
            .unwrap();
            pool_cycle();
            assert_eq!(l.dropped(), l.made(), "one cycle drops every cached value");
            assert!(l.all_dropped());
        });
    });
    assert_eq!(ledger.double_drops(), 0);
}

/// A pool dropped while it holds values (private, chain, list, victim)
/// drops every one of them, once.
#[test]
fn dropping_a_pool_drops_its_values() {
    let _s = serial();
    let ledger = Ledger::new();
    let pool = tracked_pool(&ledger);
    let rt = runtime(2, true);
    let p = pool.clone();
    within(LIMIT, "pool drop test", move || {
        rt.block_on(async move {
            let hs: Vec<_> = (0..4)
                .map(|_| {
                    let p = p.clone();
                    goro::spawn(async move { put_all(&p, get_n(&p, 40)) })
                })
                .collect();
            for h in hs {
                h.await.unwrap();
            }
            pool_cycle(); // those are the victim now
            let p2 = p.clone();
            goro::spawn(async move { put_all(&p2, get_n(&p2, 20)) })
                .await
                .unwrap();
            put_all(&p, get_n(&p, 3)); // the list
        });
    });
    assert!(ledger.made() >= 40, "made {}", ledger.made());
    assert_eq!(ledger.dropped(), 0);
    drop(pool);
    // A concurrent cycle elsewhere may hold the pool a moment longer.
    wait_until(LIMIT, "every value dropped with the pool", || {
        ledger.all_dropped()
    });
    assert_eq!(ledger.double_drops(), 0);
}

/// A panic in `new` reaches the caller of `get`; the pool keeps working, on
/// a P and off it.
#[test]
fn panics_in_new_propagate_and_leave_the_pool_usable() {
    let _s = serial();
    use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
    let fail = Arc::new(AtomicBool::new(true));
    let f = fail.clone();
    let pool = Arc::new(Pool::new(move || {
        if f.load(SeqCst) {
            panic!("new failed on purpose");
        }
        7u32
    }));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| pool.get()));
    let msg = r.unwrap_err();
    assert_eq!(msg.downcast_ref::<&str>(), Some(&"new failed on purpose"));
    pool.put(1);
    assert_eq!(pool.get(), 1, "the pool still works after the panic");

    let rt = runtime(2, true);
    let (p, f) = (pool.clone(), fail.clone());
    within(LIMIT, "panic in new on a P", move || {
        rt.block_on(async move {
            let p2 = p.clone();
            let r = goro::spawn(async move { p2.get() }).await;
            assert!(r.unwrap_err().is_panic(), "the task saw the panic");
            let p3 = p.clone();
            let v = goro::spawn(async move {
                p3.put(5);
                p3.put(6);
                let a = p3.get();
                let b = p3.get();
                (a, b)
            })
            .await
            .unwrap();
            assert_eq!((v.0.min(v.1), v.0.max(v.1)), (5, 6));
            f.store(false, SeqCst);
            assert_eq!(p.get(), 7);
        });
    });
}

/// The counters: hits from the primary, victim hits, new calls, cycles.
#[test]
fn counters_count_hits_victim_hits_new_calls_and_cycles() {
    let _s = serial();
    let ledger = Ledger::new();
    let pool = tracked_pool(&ledger);
    let rt = Arc::new(runtime(1, true));
    let cycles0 = rt.stats().pool_cycles;
    let (p, r) = (pool.clone(), rt.clone());
    within(LIMIT, "counters test", move || {
        r.block_on(async move {
            goro::spawn(async move {
                let vals = get_n(&p, 10); // 10 misses, 10 new calls
                put_all(&p, vals);
                let vals = get_n(&p, 10); // 10 hits
                put_all(&p, vals);
                pool_cycle();
                let vals = get_n(&p, 10); // 10 victim hits
                put_all(&p, vals);
            })
            .await
            .unwrap();
        });
    });
    let s = rt.stats();
    assert_eq!(s.pool_new_calls, 10, "{s:?}");
    assert_eq!(s.pool_hits, 10, "{s:?}");
    assert_eq!(s.pool_victim_hits, 10, "{s:?}");
    assert_eq!(s.pool_misses, 20, "{s:?}");
    assert!(s.pool_cycles > cycles0, "{s:?}");
}

#[test]
fn builder_rejects_a_zero_pool_cycle() {
    let e = Runtime::builder()
        .pool_cycle(Duration::ZERO)
        .build()
        .unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    assert!(
        e.to_string().contains("pool_cycle") && e.to_string().contains("accepted"),
        "{e}"
    );
}

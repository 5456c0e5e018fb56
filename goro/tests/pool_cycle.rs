//! `goro::sync::Pool` generations: what a cycle keeps and what it drops,
//! with the victim cache on and off, on a P and on threads without one;
//! dropping a pool; panics in `new`; the counters.
//!
//! Cycles rotate every pool in the process, so these tests run one at a
//! time (`serial`) and their runtimes' monitors never cycle on their own
//! (`pool_cycle` of an hour): every cycle here is a `pool_cycle()` call.
#![cfg(not(loom))]

mod support;

use goro::sync::pool::wait_reclaimed;
use goro::sync::{pool_cycle, Pool};
use goro::{Policy, Runtime};
use std::sync::Arc;
use std::time::Duration;
use support::pool::{serial, Ledger, Tracked};
use support::{wait_until, within};

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

/// A cycle returns before the values it retires are dropped (the reclaimer
/// thread drops them just after): waits until it has, failing after LIMIT.
fn reclaimed(what: &str) {
    assert!(
        wait_reclaimed(LIMIT),
        "{what}: the reclaimer had not dropped the retired values after {LIMIT:?}"
    );
}

/// Once the reclaimer is done: exactly `n` values dropped, each once, and
/// every value made among them.
fn all_dropped_once(ledger: &Ledger, n: usize, what: &str) {
    reclaimed(what);
    assert_eq!(ledger.dropped(), n, "{what}: values dropped");
    assert!(ledger.all_dropped(), "{what}: a value was not dropped");
    assert_eq!(
        ledger.double_drops(),
        0,
        "{what}: a value was dropped twice"
    );
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
                reclaimed("the first cycle");
                assert_eq!(l.dropped(), 0, "one cycle drops nothing");
                let back = get_n(&p, 100);
                assert_eq!(l.made(), 100, "all 100 came back from the victim cache");
                let mut ids: Vec<usize> = back.iter().map(|v| v.id).collect();
                ids.sort();
                assert_eq!(ids, (0..100).collect::<Vec<_>>());
                put_all(&p, back);
                pool_cycle();
                reclaimed("the first cycle after the put");
                assert_eq!(
                    l.dropped(),
                    0,
                    "the first cycle after the put moves them to the victim"
                );
                pool_cycle();
                all_dropped_once(&l, 100, "the second cycle drops the 100 values");
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
    reclaimed("the first cycle after the put");
    assert_eq!(ledger.dropped(), 0, "one cycle drops no list value");
    pool_cycle();
    all_dropped_once(&ledger, 10, "the second cycle drops the 10 list values");
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
            all_dropped_once(&l, l.made(), "one cycle drops every cached value");
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

/// A cycle does not wait for the values it retires to be dropped: with a
/// value whose `Drop` blocks until the test lets it go, `pool_cycle` still
/// returns, the `Drop` runs on another thread, and the next cycles go on
/// meanwhile. (With the drop on the cycling thread, this test hangs until
/// its deadline.)
#[test]
fn a_cycle_returns_while_a_retired_value_is_still_being_dropped() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
    use std::sync::mpsc;
    let _s = serial();
    struct Blocking {
        entered: Arc<AtomicUsize>,
        gate: Option<mpsc::Receiver<()>>,
        cycler: std::thread::ThreadId,
        off_thread: Arc<AtomicBool>,
    }
    impl Drop for Blocking {
        fn drop(&mut self) {
            self.off_thread
                .store(std::thread::current().id() != self.cycler, SeqCst);
            self.entered.fetch_add(1, SeqCst);
            if let Some(g) = self.gate.take() {
                // Released by the test, or by its end (sender dropped).
                let _ = g.recv();
            }
        }
    }
    let entered = Arc::new(AtomicUsize::new(0));
    let off_thread = Arc::new(AtomicBool::new(false));
    let (e, o) = (entered.clone(), off_thread.clone());
    let (release, gate) = mpsc::channel::<()>();
    within(
        LIMIT,
        "cycles while a retired value's Drop blocks",
        move || {
            let pool = Pool::new(|| None::<Blocking>);
            pool.put(Some(Blocking {
                entered: e.clone(),
                gate: Some(gate),
                cycler: std::thread::current().id(),
                off_thread: o.clone(),
            }));
            pool_cycle(); // to the victim cache
            pool_cycle(); // retired: its Drop blocks on the gate
            wait_until(LIMIT, "the retired value's Drop starts", || {
                e.load(SeqCst) == 1
            });
            assert!(
                o.load(SeqCst),
                "the retired value was dropped on the cycling thread"
            );
            // The reclaimer is stuck in that Drop; cycles still return.
            pool.put(None);
            pool_cycle();
            pool_cycle();
            pool_cycle();
            release.send(()).unwrap();
        },
    );
    assert_eq!(entered.load(SeqCst), 1);
    assert!(off_thread.load(SeqCst));
}

/// A value whose `Drop` panics while the reclaimer drops it.
struct Bomb {
    _value: Tracked,
    armed: bool,
}

impl Drop for Bomb {
    fn drop(&mut self) {
        if self.armed {
            panic!("a pooled value's Drop panicked on purpose");
        }
    }
}

/// Puts `n` values of which the one at `bomb` panics when dropped, cycles
/// twice, and checks that every other value was dropped anyway (its
/// storage goes on dropping past the panic), then that later cycles' values
/// are dropped too (the reclaimer survived).
fn panicking_drop_spares_the_others(pool: &Pool<Bomb>, ledger: &Ledger, n: usize, bomb: usize) {
    let mut vals: Vec<Bomb> = (0..n).map(|_| pool.get()).collect();
    vals[bomb].armed = true;
    for v in vals {
        pool.put(v);
    }
    pool_cycle();
    pool_cycle();
    // The bomb's `Tracked` is still dropped as its panic unwinds.
    all_dropped_once(ledger, n, "values stored beside one that panics");
    let vals: Vec<Bomb> = (0..5).map(|_| pool.get()).collect();
    for v in vals {
        pool.put(v);
    }
    pool_cycle();
    pool_cycle();
    all_dropped_once(ledger, n + 5, "a later cycle's values");
}

fn bomb_pool(ledger: &Arc<Ledger>) -> Arc<Pool<Bomb>> {
    let l = ledger.clone();
    Arc::new(Pool::new(move || Bomb {
        _value: l.make(),
        armed: false,
    }))
}

/// Off a P: the panicking value sits in the lists.
#[test]
fn a_panic_in_a_retired_values_drop_spares_the_others_in_the_lists() {
    let _s = serial();
    let ledger = Ledger::new();
    panicking_drop_spares_the_others(&bomb_pool(&ledger), &ledger, 10, 3);
}

/// On a P: 100 values fill the private slot and a chain of rings; the
/// panicking one is in the middle of a ring, with rings after it.
#[test]
fn a_panic_in_a_retired_values_drop_spares_the_others_in_the_rings() {
    let _s = serial();
    let ledger = Ledger::new();
    let pool = bomb_pool(&ledger);
    let rt = runtime(1, true);
    let (p, l) = (pool.clone(), ledger.clone());
    within(LIMIT, "a panicking Drop in a ring", move || {
        rt.block_on(async move {
            goro::spawn(async move { panicking_drop_spares_the_others(&p, &l, 100, 20) })
                .await
                .unwrap();
        });
    });
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

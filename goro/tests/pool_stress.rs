//! `goro::sync::Pool` under load: many tasks across procs 1..8, plain
//! threads and `block_in_place` callers, two runtimes on one pool, with
//! cycles racing every get and put (a thread calling `pool_cycle` in a loop
//! and monitors cycling every millisecond). Every value is checked: never in
//! two hands at once, and in the end every value made is dropped exactly once.
#![cfg(not(loom))]

mod support;

use goro::sync::{pool_cycle, Pool};
use goro::{Policy, Runtime};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;
use support::pool::{Ledger, Tracked};
use support::{wait_until, within};

const LIMIT: Duration = Duration::from_secs(120);

fn runtime(procs: usize, victim: bool) -> Runtime {
    let mut policy = Policy::default();
    policy.pool_victim = victim;
    Runtime::builder()
        .procs(procs)
        .policy(policy)
        .pool_cycle(Duration::from_millis(1))
        .build()
        .unwrap()
}

/// Cycles the churn must overlap with before it may stop.
const RACING_CYCLES: u64 = 50;

/// A thread that cycles every pool until stopped.
struct Cycler {
    stop: Arc<AtomicBool>,
    done: Arc<AtomicU64>,
    h: Option<std::thread::JoinHandle<u64>>,
}

impl Cycler {
    fn start() -> Cycler {
        let stop = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicU64::new(0));
        let (s, d) = (stop.clone(), done.clone());
        let h = std::thread::spawn(move || {
            let mut n = 0;
            while !s.load(SeqCst) {
                pool_cycle();
                n += 1;
                d.store(n, SeqCst);
                std::thread::yield_now();
            }
            n
        });
        Cycler {
            stop,
            done,
            h: Some(h),
        }
    }

    /// A handle for workers: have enough cycles raced with them yet?
    fn progress(&self) -> Arc<AtomicU64> {
        self.done.clone()
    }

    fn stop(mut self) -> u64 {
        self.stop.store(true, SeqCst);
        self.h.take().unwrap().join().expect("cycler thread")
    }
}

/// One worker's loop: take 1..=4 values, hold them across a yield, give
/// them back; `seed` varies the counts. Runs at least `iters` rounds and
/// until `cycles` reports [`RACING_CYCLES`] (the caller's deadline bounds it).
async fn churn(pool: Arc<Pool<Tracked>>, iters: usize, seed: usize, cycles: Arc<AtomicU64>) {
    let mut x = seed.wrapping_mul(2654435761) | 1;
    let mut i = 0;
    while i < iters || cycles.load(SeqCst) < RACING_CYCLES {
        i += 1;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let held: Vec<Tracked> = (0..1 + x % 4).map(|_| pool.get().take()).collect();
        if i % 3 == 0 {
            goro::yield_now().await;
        }
        for v in held {
            pool.put(v.release());
        }
    }
}

fn check(ledger: &Ledger, what: &str) {
    wait_until(LIMIT, what, || ledger.all_dropped());
    assert_eq!(
        ledger.double_drops(),
        0,
        "{what}: a value was dropped twice"
    );
}

fn run_many_tasks(procs: usize, victim: bool) {
    let ledger = Ledger::new();
    let l = ledger.clone();
    let pool = Arc::new(Pool::new(move || l.make()));
    let cycler = Cycler::start();
    let c = cycler.progress();
    let rt = runtime(procs, victim);
    let p = pool.clone();
    within(
        LIMIT,
        &format!("pool churn at procs={procs} victim={victim}"),
        move || {
            rt.block_on(async move {
                let hs: Vec<_> = (0..4 * procs)
                    .map(|t| goro::spawn(churn(p.clone(), 300, t, c.clone())))
                    .collect();
                // The block_on thread (no P) takes part through the lists.
                churn(p.clone(), 100, 999, c.clone()).await;
                for h in hs {
                    h.await.unwrap();
                }
            });
            let stats = rt.stats();
            assert!(stats.pool_hits > 0, "{stats:?}");
        },
    );
    let cycles = cycler.stop();
    assert!(cycles >= RACING_CYCLES, "{cycles} cycles");
    assert!(ledger.made() > 0);
    drop(pool);
    check(
        &ledger,
        &format!("every value dropped once at procs={procs} victim={victim}"),
    );
}

#[test]
fn many_tasks_across_procs_1_to_8_with_racing_cycles_victim_on() {
    for procs in [1, 2, 3, 4, 8] {
        run_many_tasks(procs, true);
    }
}

#[test]
fn many_tasks_across_procs_1_to_8_with_racing_cycles_victim_off() {
    for procs in [1, 2, 4, 8] {
        run_many_tasks(procs, false);
    }
}

/// Two runtimes (whose P numbers overlap) and plain threads share one pool.
#[test]
fn two_runtimes_and_plain_threads_share_a_pool() {
    let ledger = Ledger::new();
    let l = ledger.clone();
    let pool = Arc::new(Pool::new(move || l.make()));
    let cycler = Cycler::start();
    let mut threads = Vec::new();
    for r in 0..2 {
        let p = pool.clone();
        let c = cycler.progress();
        threads.push(std::thread::spawn(move || {
            let rt = runtime(3, r == 0);
            rt.block_on(async move {
                let hs: Vec<_> = (0..8)
                    .map(|t| goro::spawn(churn(p.clone(), 300, t + 100 * r, c.clone())))
                    .collect();
                for h in hs {
                    h.await.unwrap();
                }
            });
        }));
    }
    for t in 0..2 {
        let p = pool.clone();
        let c = cycler.progress();
        threads.push(std::thread::spawn(move || {
            // No runtime: `goro::yield_now` only wakes itself, so any
            // executor drives `churn`.
            futures::executor::block_on(churn(p, 300, 500 + t, c));
        }));
    }
    within(LIMIT, "two runtimes and two plain threads", move || {
        for t in threads {
            t.join().expect("worker thread");
        }
    });
    cycler.stop();
    drop(pool);
    check(&ledger, "every value dropped once (two runtimes)");
}

/// Tasks that use the pool inside `block_in_place` (their thread gives its
/// P away first) mix with tasks on Ps.
#[test]
fn block_in_place_callers_and_tasks_share_a_pool() {
    let ledger = Ledger::new();
    let l = ledger.clone();
    let pool = Arc::new(Pool::new(move || l.make()));
    let cycler = Cycler::start();
    let c = cycler.progress();
    let rt = runtime(2, true);
    let p = pool.clone();
    within(LIMIT, "block_in_place and tasks", move || {
        rt.block_on(async move {
            let mut hs = Vec::new();
            for t in 0..4 {
                let q = p.clone();
                hs.push(goro::spawn(async move {
                    let p = q;
                    for _ in 0..100 {
                        goro::block_in_place(|| {
                            let a = p.get().take();
                            let b = p.get().take();
                            p.put(a.release());
                            p.put(b.release());
                        });
                        goro::yield_now().await;
                    }
                    t
                }));
                hs.push(goro::spawn(churn(p.clone(), 200, t, c.clone()).then_unit()));
            }
            for h in hs {
                h.await.unwrap();
            }
        });
    });
    cycler.stop();
    drop(pool);
    check(&ledger, "every value dropped once (block_in_place)");
}

trait ThenUnit: std::future::Future<Output = ()> + Sized {
    /// Makes the output a `usize` so both kinds of task share a Vec.
    fn then_unit(self) -> impl std::future::Future<Output = usize> {
        async move {
            self.await;
            0
        }
    }
}

impl<F: std::future::Future<Output = ()>> ThenUnit for F {}

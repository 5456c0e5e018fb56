//! The pool group of goro-bench/README.md (seed 003, the victim cache), after Go's
//! benchmarks in `sync/pool_test.go` (BenchmarkPool, PoolOverflow,
//! PoolStarvation, PoolSTW, PoolExpensiveNew); shapes and op counts are
//! those of `bench/go/pool.go` (read side by side). P below is procs.
//!
//! One op is what one `pb.Next()` iteration (or one `b.N` iteration) of Go's
//! benchmark does, so ns/op and `new_per_op` read like Go's own numbers:
//! `pool` one put + one get; `pool_overflow` 100 puts + 100 gets;
//! `pool_starvation` 67 puts + 100 gets; `pool_cycle/n=N` N puts + one
//! cycle; `pool_expensive_new` 100 gets + 100 puts. The pooled value is a
//! `u64` (Go: `any(1)` / `any(42)`, which does not allocate either).
//! Parallel workloads (Go's RunParallel) split their ops over P tasks in
//! whole batches ([`per_worker`]); `ops` reports what was actually done.
//!
//! The tokio column: tokio has no pool. It runs the same shapes on tokio's
//! multi-thread runtime with [`TlsCache`], the cache people write by hand:
//! a per-thread `Vec<u64>` (`thread_local!`, at most [`LOCAL_CAP`] values)
//! with a `Mutex<Vec<u64>>` shared by all threads behind it (a `put` to a
//! full local Vec goes there, a `get` from an empty one looks there, then
//! calls `new`). It never steals from another thread's Vec and never drops
//! anything on its own, so it has no cycle: `pool_cycle` and
//! `pool_expensive_new` have no tokio column. (A plain `Mutex<Vec<u64>>` is
//! the fallback half of it; in `pool_starvation` every miss goes through that
//! mutex, so it is measured there, not as a separate row.)

use super::per_worker;
use crate::registry::{body, Ctx, Meter, RunOut, Workload};
use crate::rt::{Gang, Gate, Goro, Latch, Rt, Tokio};
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Values per burst in pool_overflow, gets per round in pool_starvation
/// and in pool_expensive_new (Go: the 100 of each benchmark).
const BATCH: u64 = 100;
/// Puts per round in pool_starvation: 100 - int(100*0.33) (Go's countStarved).
const STARVED: u64 = 67;
/// pool_cycle's pooled-value counts: Go's PoolSTW puts 100,000; 1,000 beside
/// it shows whether a cycle's cost depends on how many values are pooled.
const CYCLE_NS: [u64; 2] = [1_000, 100_000];
/// pool_expensive_new: one cycle every this many ops (all tasks together).
const CYCLE_EVERY: u64 = 10;
/// pool_expensive_new: how long `new` takes.
const NEW_COST: Duration = Duration::from_millis(1);
/// The tokio column's per-thread capacity (see [`TlsCache`]): a round
/// number above every burst in this group, as a hand-written cache would be
/// sized, so pool_overflow's bursts of 100 stay in the thread's own Vec. Not
/// tuned to make the baseline spill: with 64 the row is 526 / 2531 ns/op at
/// procs 1 / 2 instead of about 354 / 368, which would flatter goro.
pub const LOCAL_CAP: usize = 256;

/// Why tokio has no column for the cycle workloads.
const TOKIO_NO_CYCLE: &str = "tokio has no pool and nothing like a pool cycle: its column's hand-written thread-local cache never drops values, so there is no cycle to time and no new-after-cycle to count";

/// Registers the pool group.
pub fn register(v: &mut Vec<Workload>) {
    let w = |name: &str, op: &str, ops: (u64, u64)| Workload::new(name, "pool", op, ops);
    v.push(
        w(
            "pool",
            "one put then one get (P tasks)",
            (10_000_000, 1_000_000),
        )
        .goro(Ok(body(pool::<Goro, GoroPool>)))
        .tokio(Ok(body(pool::<Tokio, TlsCache>))),
    );
    v.push(
        w(
            "pool_overflow",
            "100 puts then 100 gets (P tasks)",
            (100_000, 10_000),
        )
        .goro(Ok(body(pool_overflow::<Goro, GoroPool>)))
        .tokio(Ok(body(pool_overflow::<Tokio, TlsCache>))),
    );
    v.push(
        w(
            "pool_starvation",
            "67 puts then 100 gets, so gets steal and miss (P tasks)",
            (100_000, 10_000),
        )
        .goro(Ok(body(pool_starvation::<Goro, GoroPool>)))
        .tokio(Ok(body(pool_starvation::<Tokio, TlsCache>))),
    );
    for n in CYCLE_NS {
        v.push(
            w(
                &format!("pool_cycle/n={n}"),
                &format!(
                    "{n} puts then one forced cycle (one task); extra p50_ns, p95_ns: the cycle"
                ),
                (200, 20),
            )
            .seed("003")
            .goro(Ok(body(move |ctx| goro_side::pool_cycle(ctx, n))))
            .tokio(Err(TOKIO_NO_CYCLE))
            .show(&["p50_ns", "p95_ns"]),
        );
    }
    v.push(
        w(
            "pool_expensive_new",
            "100 gets then 100 puts, new sleeps 1 ms, a cycle every 10 ops (P tasks); extra new_per_op, cycles_per_op",
            (400, 60),
        )
        .seed("003")
        .goro(Ok(body(goro_side::pool_expensive_new)))
        .tokio(Err(TOKIO_NO_CYCLE))
        .show(&["new_per_op", "cycles_per_op"]),
    );
}

// ---------------------------------------------------------------------------
// The pools: goro's, and the tokio column's hand-written cache.
// ---------------------------------------------------------------------------

/// What the shared shapes need from a pool of `u64`s.
pub trait Cache: Send + Sync + 'static {
    /// A pool whose misses return 0 (Go: a Pool without New returns nil).
    fn make() -> Self;
    /// Takes a value, or makes one.
    fn get(&self) -> u64;
    /// Caches a value.
    fn put(&self, v: u64);
}

/// `goro::sync::Pool<u64>`.
pub struct GoroPool(goro::sync::Pool<u64>);

impl Cache for GoroPool {
    fn make() -> Self {
        GoroPool(goro::sync::Pool::new(|| 0))
    }
    #[inline]
    fn get(&self) -> u64 {
        self.0.get()
    }
    #[inline]
    fn put(&self, v: u64) {
        self.0.put(v)
    }
}

/// The tokio column's pool: a per-thread `Vec` of at most [`LOCAL_CAP`]
/// values in front of one `Mutex<Vec>` shared by every thread. `put` pushes
/// on the thread's Vec, or on the shared one when the thread's is full;
/// `get` pops the thread's Vec, else the shared one, else calls `new`.
///
/// `thread_local!` storage is per type, not per value, so each thread's Vec
/// is tagged with the cache it belongs to; a thread meeting a Vec left by an
/// earlier cache (an earlier run) empties it first.
pub struct TlsCache {
    id: u64,
    shared: Mutex<Vec<u64>>,
    new: fn() -> u64,
}

static NEXT_CACHE_ID: AtomicU64 = AtomicU64::new(1);

std::thread_local! {
    /// (the owning cache's id, its values on this thread)
    static LOCAL: RefCell<(u64, Vec<u64>)> = const { RefCell::new((0, Vec::new())) };
}

impl TlsCache {
    fn with_local<R>(&self, f: impl FnOnce(&mut Vec<u64>) -> R) -> R {
        LOCAL.with(|l| {
            let mut l = l.borrow_mut();
            if l.0 != self.id {
                l.0 = self.id;
                l.1.clear();
            }
            f(&mut l.1)
        })
    }
}

impl Cache for TlsCache {
    fn make() -> Self {
        TlsCache {
            id: NEXT_CACHE_ID.fetch_add(1, Ordering::Relaxed),
            shared: Mutex::new(Vec::new()),
            new: || 0,
        }
    }
    #[inline]
    fn get(&self) -> u64 {
        if let Some(v) = self.with_local(Vec::pop) {
            return v;
        }
        if let Some(v) = self.shared.lock().unwrap().pop() {
            return v;
        }
        (self.new)()
    }
    #[inline]
    fn put(&self, v: u64) {
        let full = self.with_local(|l| {
            if l.len() < LOCAL_CAP {
                l.push(v);
                false
            } else {
                true
            }
        });
        if full {
            self.shared.lock().unwrap().push(v);
        }
    }
}

// ---------------------------------------------------------------------------
// Shared shapes: the same code on goro (goro::sync::Pool) and tokio (TlsCache).
// ---------------------------------------------------------------------------

/// Parks P tasks that each run `round` K times against one pool, times them
/// from release to the last return, and reports `ops`.
async fn run_parallel<R, C, F>(ctx: &Ctx, k: u64, ops: u64, round: F) -> RunOut
where
    R: Rt,
    C: Cache,
    F: Fn(&C) + Copy + Send + 'static,
{
    let p = Arc::new(C::make());
    let g = Gang::new::<R, _, _>(ctx.procs, |_| {
        let p = p.clone();
        async move {
            for _ in 0..k {
                round(&p);
            }
        }
    })
    .await;
    let m = Meter::start();
    g.release();
    g.wait().await;
    let meas = m.stop();
    RunOut::new(ops, meas).extra("goroutines", ctx.procs as f64)
}

/// pool (Go: BenchmarkPool).
///
/// P tasks sharing one pool; each does K times: `put(1)`, then `get()`.
/// One op = one put plus one get. K = total/P.
/// Ops: 10,000,000 normal, 1,000,000 quick (rounded down to a multiple of P).
async fn pool<R: Rt, C: Cache>(ctx: Ctx) -> RunOut {
    let (k, ops) = per_worker(ctx.size(10_000_000, 1_000_000), ctx.procs as u64, 1);
    run_parallel::<R, C, _>(&ctx, k, ops, |p| {
        p.put(1);
        std::hint::black_box(p.get());
    })
    .await
}

/// pool_overflow (Go: BenchmarkPoolOverflow).
///
/// P tasks sharing one pool; each does K rounds of: 100 × `put(1)`, then
/// 100 × `get()`. One op = one round (100 puts + 100 gets, Go's op).
/// K = total/P.
/// Ops: 100,000 normal, 10,000 quick (rounded down to a multiple of P).
async fn pool_overflow<R: Rt, C: Cache>(ctx: Ctx) -> RunOut {
    let (k, ops) = per_worker(ctx.size(100_000, 10_000), ctx.procs as u64, 1);
    run_parallel::<R, C, _>(&ctx, k, ops, |p| {
        for _ in 0..BATCH {
            p.put(1);
        }
        for _ in 0..BATCH {
            std::hint::black_box(p.get());
        }
    })
    .await
    .extra("batch", BATCH as f64)
}

/// pool_starvation (Go: BenchmarkPoolStarvation).
///
/// P tasks sharing one pool; each does K rounds of: 67 × `put(1)`, then
/// 100 × `get()`; a third of the gets find the own P's storage empty and
/// steal from other Ps or miss (`new`, which returns 0). One op = one round
/// (67 puts + 100 gets, Go's op). K = total/P.
/// Ops: 100,000 normal, 10,000 quick (rounded down to a multiple of P).
async fn pool_starvation<R: Rt, C: Cache>(ctx: Ctx) -> RunOut {
    let (k, ops) = per_worker(ctx.size(100_000, 10_000), ctx.procs as u64, 1);
    run_parallel::<R, C, _>(&ctx, k, ops, |p| {
        for _ in 0..STARVED {
            p.put(1);
        }
        for _ in 0..BATCH {
            std::hint::black_box(p.get());
        }
    })
    .await
    .extra("puts", STARVED as f64)
    .extra("gets", BATCH as f64)
}

/// Go's quantile of PoolSTW: `sorted[len*q/100]`.
fn pct(sorted: &[u64], q: usize) -> f64 {
    sorted[(sorted.len() * q / 100).min(sorted.len() - 1)] as f64
}

// ---------------------------------------------------------------------------
// goro only: the cycle workloads.
// ---------------------------------------------------------------------------

mod goro_side {
    use super::*;
    use goro::sync::{pool_cycle as cycle, Pool};

    /// pool_cycle/n=N (Go: BenchmarkPoolSTW, with N values instead of its
    /// fixed 100,000).
    ///
    /// One task, one pool kept across ops. K times: N × `put(42)`, then one
    /// forced cycle (`goro::sync::pool_cycle()`; Go: `runtime.GC()` with the
    /// collector otherwise off), its wall time recorded. So each cycle moves
    /// the N values just put to the victim cache and drops the previous op's
    /// N (with `pool_victim=false`: drops the N just put). One op = N puts
    /// plus one cycle. Extras: `p50_ns`, `p95_ns` = the cycle's cost, as
    /// PoolSTW reports its pause (`sorted[len*q/100]`). A goro cycle stops
    /// nothing, so its cost here is the wall time of the `pool_cycle()` call
    /// (the cycling task's stall); Go's is the stop-the-world pause of that
    /// GC (`MemStats.PauseNs`), which is where its pool cleanup runs. Neither
    /// includes freeing the dropped values: Go frees them outside the pause
    /// (the collection's concurrent phases), goro's reclaimer thread drops
    /// them after the call returns; on both sides that work shows in the
    /// cpu ns/op column. `cycle_wall_p50_ns` is the median wall time of
    /// the call on both sides (Go's includes the whole collection).
    /// Ops: 200 normal, 20 quick, for every N.
    pub async fn pool_cycle(ctx: Ctx, n: u64) -> RunOut {
        let k = ctx.size(200, 20);
        let p = Pool::new(|| 0u64);
        let mut walls: Vec<u64> = Vec::with_capacity(k as usize);
        let m = Meter::start();
        for _ in 0..k {
            for _ in 0..n {
                p.put(42);
            }
            let t = Instant::now();
            cycle();
            walls.push(t.elapsed().as_nanos() as u64);
        }
        let meas = m.stop();
        drop(p);
        walls.sort_unstable();
        RunOut::new(k, meas)
            .extra("n", n as f64)
            .extra("p50_ns", pct(&walls, 50))
            .extra("p95_ns", pct(&walls, 95))
            .extra("cycle_wall_p50_ns", pct(&walls, 50))
    }

    /// pool_expensive_new (Go: BenchmarkPoolExpensiveNew).
    ///
    /// One pool whose `new` sleeps 1 ms (`std::thread::sleep`: `new` is a
    /// plain closure; Go's `time.Sleep` parks the goroutine, and here each P
    /// runs one worker, so either way the worker waits) and counts its calls.
    /// P tasks; before the clock each fills the pool with its 100 values
    /// (100 gets then 100 puts while `new` is still free and uncounted: the
    /// steady state Go's long runs reach, without the 100 ms first fill in
    /// every run). Measured: each task does K rounds of 100 × `get()` into
    /// its own array, then 100 × `put()` back; after each round it adds one
    /// to a shared op count, and the task that brings it to a multiple of 10
    /// forces a cycle (`goro::sync::pool_cycle()`; Go: `runtime.GC()`, the
    /// collector otherwise off), so cycles come at a steady rate of one per
    /// 10 ops. (Go's own benchmark lets the GC run on its own, paced by a
    /// 32 KiB allocation per get; goro has no GC, so both sides force the
    /// cycle instead.) One op = one round (100 gets + 100 puts, Go's op).
    /// K = total/P. Extras: `new_per_op` (Go: New/op) and `cycles_per_op`
    /// (Go: GCs/op; there, at P >= 2, two `runtime.GC()` calls that overlap
    /// make one GC, so it can be below 0.1; `pool_cycle()` calls never
    /// merge; and a goroutine blocked in a whole `runtime.GC()` can sit
    /// through the next one another goroutine forces, losing its values,
    /// so Go's new_per_op is not 0 at P >= 2). With the victim cache a value
    /// put before a cycle is
    /// still there after it; without it (`pool_victim=false`), every cycle
    /// empties the pool and the next gets call `new`.
    /// Ops: 400 normal, 60 quick (rounded down to a multiple of P).
    pub async fn pool_expensive_new(ctx: Ctx) -> RunOut {
        let (k, ops) = per_worker(ctx.size(400, 60), ctx.procs as u64, 1);
        let armed = Arc::new(AtomicBool::new(false));
        let news = Arc::new(AtomicU64::new(0));
        let p = {
            let (armed, news) = (armed.clone(), news.clone());
            Arc::new(Pool::new(move || {
                if armed.load(Ordering::Relaxed) {
                    news.fetch_add(1, Ordering::Relaxed);
                    std::thread::sleep(NEW_COST);
                }
                42u64
            }))
        };
        let done = Arc::new(AtomicU64::new(0));
        let cycles = Arc::new(AtomicU64::new(0));
        let filled = Latch::new(ctx.procs);
        let start = Gate::default();
        let g = Gang::new::<Goro, _, _>(ctx.procs, |_| {
            let (p, done, cycles) = (p.clone(), done.clone(), cycles.clone());
            let (filled, start) = (filled.clone(), start.clone());
            async move {
                let mut items = [0u64; BATCH as usize];
                for it in items.iter_mut() {
                    *it = p.get();
                }
                for it in items {
                    p.put(it);
                }
                filled.count_down();
                start.wait().await;
                for _ in 0..k {
                    for it in items.iter_mut() {
                        *it = p.get();
                    }
                    for it in items {
                        p.put(it);
                    }
                    if (done.fetch_add(1, Ordering::Relaxed) + 1) % CYCLE_EVERY == 0 {
                        cycle();
                        cycles.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        })
        .await;
        g.release();
        filled.wait().await;
        armed.store(true, Ordering::SeqCst);
        let m = Meter::start();
        start.open();
        g.wait().await;
        let meas = m.stop();
        armed.store(false, Ordering::SeqCst);
        drop(p);
        let per_op = |c: &AtomicU64| c.load(Ordering::Relaxed) as f64 / ops as f64;
        RunOut::new(ops, meas)
            .extra("goroutines", ctx.procs as f64)
            .extra("new_per_op", per_op(&news))
            .extra("cycles_per_op", per_op(&cycles))
    }
}

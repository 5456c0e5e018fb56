//! The sched group of goro-bench/README.md: task creation, yielding, token passing
//! over channels, bursts, idling, oversubscription.
//!
//! Each workload's header comment says what one op is; the shapes and op
//! counts are those of `bench/go/sched.go` (read side by side). Each is
//! written once, generic over [`Rt`] (its channel: goro's `goro::chan`,
//! tokio's `tokio::sync::mpsc`), except `idle_cpu`, whose tasks park in a
//! select on a channel and a timer, spelt differently on each runtime, and
//! `skynet` (its own file, `skynet.rs`).
//! tokio has no rendezvous channel: its `mpsc::channel(1)` stands where Go
//! and goro use capacity 0, so `ring` and `ring_buf` are the same program
//! on tokio.

use crate::load::LoadChild;
use crate::registry::{body, Ctx, Measured, Meter, RunOut, Workload};
use crate::rt::{Gang, Goro, Histogram, Latch, Rt, Tokio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The ring sizes of `ring/n=` and `ring_buf/n=`.
pub const RING_SIZES: [usize; 4] = [10, 100, 1000, 10000];
/// The ring size of `oversub/ring`.
pub const OVERSUB_RING: usize = 100;

/// Registers the sched group.
pub fn register(v: &mut Vec<Workload>) {
    v.push(
        Workload::new(
            "spawn_chain",
            "sched",
            "one task spawn+run in a chain (each task spawns the next)",
            (100_000, 20_000),
        )
        .goro(Ok(body(spawn_chain::<Goro>)))
        .tokio(Ok(body(spawn_chain::<Tokio>))),
    );
    v.push(
        Workload::new(
            "spawn_many",
            "sched",
            "one task spawned by a single spawner that decrements a shared counter",
            (100_000, 20_000),
        )
        .goro(Ok(body(spawn_many::<Goro>)))
        .tokio(Ok(body(spawn_many::<Tokio>))),
    );
    v.push(super::skynet::workload());
    v.push(
        Workload::new(
            "yield_many",
            "sched",
            "one yield by one of 200 tasks",
            (200_000, 20_000),
        )
        .goro(Ok(body(yield_many::<Goro>)))
        .tokio(Ok(body(yield_many::<Tokio>))),
    );
    v.push(
        Workload::new(
            "ping_pong",
            "sched",
            "one round trip (two rendezvous hand-offs) between two tasks",
            (500_000, 50_000),
        )
        .seed("004")
        .goro(Ok(body(|c| ping_pong::<Goro>(c, None))))
        .tokio(Ok(body(|c| ping_pong::<Tokio>(c, None)))),
    );
    for (prefix, cap) in [("ring", 0usize), ("ring_buf", 1)] {
        for n in RING_SIZES {
            let what = if cap == 0 {
                "unbuffered channels"
            } else {
                "channels of capacity 1"
            };
            v.push(
                Workload::new(
                    format!("{prefix}/n={n}"),
                    "sched",
                    format!("one token hop in a ring of {n} tasks over {what}"),
                    (1_000_000, 100_000),
                )
                .seed("004")
                .goro(Ok(body(move |c| ring::<Goro>(c, n, cap))))
                .tokio(Ok(body(move |c| ring::<Tokio>(c, n, cap)))),
            );
        }
    }
    for procs in [16, 64, 128] {
        v.push(
            Workload::new(
                format!("burst/procs={procs}"),
                "sched",
                "one short task (~0.5 µs of work) in bursts of 1000 separated by 500 µs idle gaps",
                (200_000, 40_000),
            )
            .seed("002")
            .fixed_procs(procs)
            .goro(Ok(body(burst::<Goro>)))
            .tokio(Ok(body(burst::<Tokio>)))
            .show(&[
                "find_runnable_share",
                "steal_share",
                "inspected_per_find",
                "find_cpu_share",
            ]),
        );
    }
    v.push(
        Workload::new("idle_cpu", "sched", "one millisecond of an idle runtime holding 10,000 parked tasks (cpu/op = CPU ns burnt per idle ms)", (2_000, 500))
            .seed("000")
            .goro(Ok(body(goro_side::idle_cpu)))
            .tokio(Ok(body(tokio_side::idle_cpu)))
            .show(&["cpu_ms_per_s", "wakeups_per_s"]),
    );
    v.push(
        Workload::new(
            "oversub/ping_pong",
            "sched",
            "one ping_pong round trip while a second copy of the process runs ping_pong",
            (500_000, 50_000),
        )
        .seed("000")
        .goro(Ok(body(|c| ping_pong::<Goro>(c, Some("ping_pong")))))
        .tokio(Ok(body(|c| ping_pong::<Tokio>(c, Some("ping_pong")))))
        .show(&["p50_ns", "p99_ns", "p999_ns"]),
    );
    v.push(
        Workload::new("oversub/ring", "sched", format!("one token hop in a ring of {OVERSUB_RING} (rendezvous) while a second copy of the process runs ring/n={OVERSUB_RING}"), (1_000_000, 100_000))
            .seed("000")
            .goro(Ok(body(oversub_ring::<Goro>)))
            .tokio(Ok(body(oversub_ring::<Tokio>)))
            .show(&["p50_ns", "p99_ns", "p999_ns"]),
    );
}

// ---------------------------------------------------------------------------
// The same code on goro and tokio.
// ---------------------------------------------------------------------------

/// spawn_chain (Go: BenchmarkCreateGoroutines, one chain).
///
/// One op = one task created and run: task k spawns task k-1 and returns;
/// task 0 opens `done`. Measured from the first spawn until `done` opens.
/// Ops: 100,000 normal, 20,000 quick (exactly that many tasks).
async fn spawn_chain<R: Rt>(ctx: Ctx) -> RunOut {
    let n = ctx.size(100_000, 20_000);
    let done = Latch::new(1);
    let m = Meter::start();
    let d = done.clone();
    R::spawn(async move { chain::<R>(n - 1, d) }); // tasks n-1 .. 0: n in all
    done.wait().await;
    RunOut::new(n, m.stop())
}

fn chain<R: Rt>(k: u64, done: Latch) {
    if k == 0 {
        done.count_down();
    } else {
        R::spawn(async move { chain::<R>(k - 1, done) });
    }
}

/// spawn_many (Go: BenchmarkCreateGoroutinesSingle; tokio: spawn_many_local).
///
/// One op = one task spawned by a single spawner (the benchmark task, in a
/// plain loop) plus that task decrementing a shared counter; the task that
/// brings it to zero opens `done`. Measured from the first spawn until then.
/// Ops: 100,000 normal, 20,000 quick.
async fn spawn_many<R: Rt>(ctx: Ctx) -> RunOut {
    let n = ctx.size(100_000, 20_000);
    let left = Arc::new(AtomicU64::new(n));
    let done = Latch::new(1);
    let m = Meter::start();
    for _ in 0..n {
        let (left, done) = (left.clone(), done.clone());
        R::spawn(async move {
            if left.fetch_sub(1, Ordering::AcqRel) == 1 {
                done.count_down();
            }
        });
    }
    done.wait().await;
    RunOut::new(n, m.stop())
}

/// Tasks in yield_many (tokio's TASKS).
const YIELD_TASKS: u64 = 200;

/// yield_many (tokio: yield_many; Go: Gosched loop).
///
/// One op = one yield. 200 tasks each yield Y times, then count down
/// (Y = 1000 normal, 100 quick). As in tokio's bench, the 200 spawns are
/// inside the measured region. Ops: 200,000 normal, 20,000 quick.
async fn yield_many<R: Rt>(ctx: Ctx) -> RunOut {
    let y = ctx.size(1000, 100);
    let wg = Latch::new(YIELD_TASKS as usize);
    let m = Meter::start();
    for _ in 0..YIELD_TASKS {
        let wg = wg.clone();
        R::spawn(async move {
            for _ in 0..y {
                R::yield_now().await;
            }
            wg.count_down();
        });
    }
    wg.wait().await;
    RunOut::new(YIELD_TASKS * y, m.stop()).extra("tasks", YIELD_TASKS as f64)
}

const BURST_TASKS: u64 = 1000;
const BURST_GAP: Duration = Duration::from_micros(500);

/// About half a microsecond of arithmetic the optimiser cannot remove.
fn short_work(seed: u64) -> u64 {
    let mut x = seed;
    for i in 0..500u64 {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(i);
    }
    std::hint::black_box(x)
}

/// burst/procs=16,64,128 (seed 002; Go twin `burst` in bench/go/sched.go).
///
/// procs is 16, 64 or 128, far above the cores. B bursts; in each, the benchmark
/// task spawns 1000 short tasks (~0.5 µs of arithmetic each), waits for all
/// of them, then idles 500 µs (a sleep on the blocking pool, so every P is
/// idle and its thread goes looking for work, spins, and parks). One op =
/// one short task; the gaps are inside the measured region (0.5 ns/op per
/// µs of gap). On goro the harness adds `find_runnable_share` and
/// `steal_share`: time in find-runnable's slow path / in steal passes over
/// wall × procs (from `Runtime::stats`); and the work measures of
/// `goro_extras` (queues inspected and failed steals per search, searches
/// per op, the search's share of process CPU).
/// Ops: B × 1000 with B = 200 normal, 40 quick.
async fn burst<R: Rt>(ctx: Ctx) -> RunOut {
    let bursts = ctx.size(200, 40);
    let m = Meter::start();
    for b in 0..bursts {
        let done = Latch::new(BURST_TASKS as usize);
        for t in 0..BURST_TASKS {
            let done = done.clone();
            R::spawn(async move {
                short_work(b ^ t);
                done.count_down();
            });
        }
        done.wait().await;
        R::run_blocking(|| std::thread::sleep(BURST_GAP)).await;
    }
    RunOut::new(bursts * BURST_TASKS, m.stop())
        .extra("tasks_per_burst", BURST_TASKS as f64)
        .extra("gap_us", BURST_GAP.as_micros() as f64)
}

/// Tasks parked in idle_cpu.
const IDLE_TASKS: usize = 10_000;

/// idle_cpu's common tail: the extras from the idle region.
fn idle_out(idle_ms: u64, meas: Measured) -> RunOut {
    let secs = meas.wall_ns as f64 / 1e9;
    RunOut::new(idle_ms, meas)
        .extra("tasks", IDLE_TASKS as f64)
        .extra("cpu_ms_per_s", meas.cpu_ns as f64 / 1e6 / secs)
        .extra("wakeups_per_s", meas.nvcsw as f64 / secs)
}

/// Records each op's latency into a histogram and reports its quantiles.
fn with_quantiles(out: RunOut, h: &Histogram) -> RunOut {
    out.extra("p50_ns", h.quantile(0.5))
        .extra("p99_ns", h.quantile(0.99))
        .extra("p999_ns", h.quantile(0.999))
}

/// ping_pong (Go: ChanSync shape, two channels); with `load`, oversub/ping_pong.
///
/// Two tasks, two rendezvous channels ping and pong (tokio: capacity 1).
/// The pinger does R times `ping.send(i); pong.recv()`; the ponger R times
/// `v = ping.recv(); pong.send(v)`. One op = one round trip. Both tasks
/// are spawned and parked before the clock starts.
/// Ops: 500,000 normal, 50,000 quick.
///
/// oversub (`load = Some(workload)`): first a second copy of this
/// process starts running `workload` on the same runtime and procs in a
/// loop (the cores are oversubscribed); the pinger records each round
/// trip's latency (p50/p99/p999 extras).
async fn ping_pong<R: Rt>(ctx: Ctx, load: Option<&'static str>) -> RunOut {
    let child = match load {
        Some(w) => Some(LoadChild::start_async::<R>(&ctx, w).await),
        None => None,
    };
    let r = ctx.size(500_000, 50_000);
    let (ping_tx, ping_rx) = R::bounded::<u64>(0);
    let (pong_tx, pong_rx) = R::bounded::<u64>(0);
    let hist = Arc::new(Histogram::default());
    let rec = child.is_some();
    // Each end goes to exactly one task: hand them over through slots.
    let slots = std::sync::Mutex::new((Some((ping_tx, pong_rx)), Some((ping_rx, pong_tx))));
    let h = hist.clone();
    let g = Gang::new::<R, _, _>(2, move |who| {
        let mut s = slots.lock().unwrap();
        let h = h.clone();
        let pinger = if who == 0 { s.0.take() } else { None };
        let ponger = if who == 1 { s.1.take() } else { None };
        async move {
            if let Some((ping_tx, mut pong_rx)) = pinger {
                for i in 0..r {
                    let t = rec.then(Instant::now);
                    R::send(&ping_tx, i).await.unwrap();
                    R::recv(&mut pong_rx).await.unwrap();
                    if let Some(t) = t {
                        h.record_since(t);
                    }
                }
            } else if let Some((mut ping_rx, pong_tx)) = ponger {
                for _ in 0..r {
                    let v = R::recv(&mut ping_rx).await.unwrap();
                    R::send(&pong_tx, v).await.unwrap();
                }
            }
        }
    })
    .await;
    let m = Meter::start();
    g.release();
    g.wait().await;
    let meas = m.stop();
    let out = RunOut::new(r, meas);
    match child {
        Some(c) => {
            drop(c);
            with_quantiles(out, &hist)
        }
        None => out,
    }
}

/// What goes round a ring: the hops left, and for oversub/ring the time it
/// was sent (so `u64` compiles to the plain ring, with nothing recorded).
trait Token: Copy + Send + 'static {
    /// A token with `hops` left, sent now.
    fn new(hops: u64) -> Self;
    /// The hops left.
    fn hops(self) -> u64;
    /// On arrival: oversub/ring records the hop's latency.
    fn arrived(self, h: &Histogram);
}

impl Token for u64 {
    fn new(hops: u64) -> Self {
        hops
    }
    fn hops(self) -> u64 {
        self
    }
    fn arrived(self, _: &Histogram) {}
}

impl Token for (u64, Instant) {
    fn new(hops: u64) -> Self {
        (hops, Instant::now())
    }
    fn hops(self) -> u64 {
        self.0
    }
    fn arrived(self, h: &Histogram) {
        h.record_since(self.1);
    }
}

/// The hops of the token that ends a ring's tasks where a sender cannot
/// close a channel other tasks still send on (tokio; see [`Rt::CAN_CLOSE`]).
const RING_STOP: u64 = u64::MAX;

/// Runs a ring of `n` tasks over channels of capacity `cap` for `hops`
/// hops (see [`ring`]), recording into `hist` what the token records, and
/// returns the measured region. Afterwards it ends the tasks: goro closes
/// every channel; tokio sends a [`RING_STOP`] token round (each task passes
/// it on and returns; the last one finds 0's receiver gone).
async fn run_ring<R: Rt, T: Token>(
    n: usize,
    cap: usize,
    hops: u64,
    hist: &Arc<Histogram>,
) -> Measured {
    let (txs, rxs): (Vec<_>, Vec<_>) = (0..n).map(|_| R::bounded::<T>(cap)).unzip();
    let done = Latch::new(1);
    let ready = Latch::new(n);
    let exited = Latch::new(n);
    for (i, mut rx) in rxs.into_iter().enumerate() {
        let out = txs[(i + 1) % n].clone();
        let (done, ready, exited, h) = (done.clone(), ready.clone(), exited.clone(), hist.clone());
        R::spawn(async move {
            ready.count_down();
            while let Some(t) = R::recv(&mut rx).await {
                let v = t.hops();
                if !R::CAN_CLOSE && v == RING_STOP {
                    let _ = R::send(&out, t).await;
                    break;
                }
                t.arrived(&h);
                if v == 0 {
                    done.count_down();
                    continue;
                }
                if R::send(&out, T::new(v - 1)).await.is_err() {
                    break;
                }
            }
            exited.count_down();
        });
    }
    ready.wait().await;

    let m = Meter::start();
    R::send(&txs[0], T::new(hops - 1)).await.unwrap();
    done.wait().await;
    let meas = m.stop();

    if R::CAN_CLOSE {
        txs.iter().for_each(R::close);
    } else {
        R::send(&txs[0], T::new(RING_STOP)).await.unwrap();
    }
    exited.wait().await;
    meas
}

/// ring/n=N (cap 0, Go: GoroutineRing) and ring_buf/n=N (cap 1, GoroutineRingBuf).
///
/// n tasks; task i receives from `chans[i]` and sends to `chans[(i+1)%n]`.
/// One token (the number of hops left) goes around: the benchmark task
/// sends H-1 into `chans[0]`; a task that receives v > 0 sends v-1 on; the
/// one that receives 0 opens `done`: exactly H transfers. One op = one
/// hop (one channel transfer and the wake of the next task). The n tasks
/// are running (about to block on their first receive) before the clock
/// starts; afterwards they are ended ([`run_ring`]).
/// Ops: H = 1,000,000 normal, 100,000 quick, for every n.
async fn ring<R: Rt>(ctx: Ctx, n: usize, cap: usize) -> RunOut {
    let hops = ctx.size(1_000_000, 100_000);
    let unused = Arc::new(Histogram::default());
    let meas = run_ring::<R, u64>(n, cap, hops, &unused).await;
    RunOut::new(hops, meas)
        .extra("n", n as f64)
        .extra("cap", cap as f64)
}

/// oversub/ring: ring/n=100 over rendezvous channels while a second copy
/// of the process runs ring/n=100. The token carries the time it was
/// sent; each receiver records the hop's latency. One op = one hop.
/// Ops: 1,000,000 normal, 100,000 quick.
async fn oversub_ring<R: Rt>(ctx: Ctx) -> RunOut {
    let child = LoadChild::start_async::<R>(&ctx, "ring/n=100").await;
    let hops = ctx.size(1_000_000, 100_000);
    let hist = Arc::new(Histogram::default());
    let meas = run_ring::<R, (u64, Instant)>(OVERSUB_RING, 0, hops, &hist).await;
    drop(child);
    with_quantiles(
        RunOut::new(hops, meas).extra("n", OVERSUB_RING as f64),
        &hist,
    )
}

// ---------------------------------------------------------------------------
// idle_cpu, once per runtime: each parks its tasks in its own select over a
// channel and a timer.
// ---------------------------------------------------------------------------

mod goro_side {
    use super::*;
    use goro::chan::bounded;

    /// idle_cpu (seed 000).
    ///
    /// 10,000 tasks each parked in a `select!` on a receive from its own
    /// rendezvous channel and a one-hour timer (so 10,000 timers an hour
    /// away are armed, spread over the Ps). After a settling
    /// pause of 50 ms, the benchmark task waits on the blocking pool for the
    /// idle period (2 s normal, 0.5 s quick), so the runtime has nothing to
    /// run. One op = one idle millisecond: cpu_ns_per_op is the CPU burnt per
    /// idle ms; extras `cpu_ms_per_s` and `wakeups_per_s` (voluntary context
    /// switches of the process per second ≈ thread wakeups).
    /// Ops: 2,000 normal, 500 quick.
    pub async fn idle_cpu(ctx: Ctx) -> RunOut {
        let idle_ms = ctx.size(2_000, 500);
        let ready = Latch::new(IDLE_TASKS);
        let exited = Latch::new(IDLE_TASKS);
        let mut txs = Vec::with_capacity(IDLE_TASKS);
        for _ in 0..IDLE_TASKS {
            let (tx, rx) = bounded::<()>(0);
            txs.push(tx);
            let (ready, exited) = (ready.clone(), exited.clone());
            Goro::spawn(async move {
                let timer = goro::time::Timer::new(Duration::from_secs(3600));
                ready.count_down();
                goro::select! {
                    recv(rx) -> _m => {}
                    recv(timer.rx()) -> _t => {}
                }
                timer.stop();
                exited.count_down();
            });
        }
        ready.wait().await;
        Goro::run_blocking(|| std::thread::sleep(Duration::from_millis(50))).await;
        let m = Meter::start();
        Goro::run_blocking(move || std::thread::sleep(Duration::from_millis(idle_ms))).await;
        let meas = m.stop();
        for tx in &txs {
            tx.close();
        }
        exited.wait().await;
        idle_out(idle_ms, meas).extra("timers", IDLE_TASKS as f64)
    }
}

mod tokio_side {
    use super::*;
    use tokio::sync::mpsc;

    /// idle_cpu: the goro shape (see there), each task parked in a
    /// `select!` on its own channel and a one-hour `sleep` (so 10,000 timers
    /// an hour away are armed).
    pub async fn idle_cpu(ctx: Ctx) -> RunOut {
        let idle_ms = ctx.size(2_000, 500);
        let ready = Latch::new(IDLE_TASKS);
        let exited = Latch::new(IDLE_TASKS);
        let mut txs = Vec::with_capacity(IDLE_TASKS);
        for _ in 0..IDLE_TASKS {
            let (tx, mut rx) = mpsc::channel::<()>(1);
            txs.push(tx);
            let (ready, exited) = (ready.clone(), exited.clone());
            Tokio::spawn(async move {
                ready.count_down();
                tokio::select! {
                    _ = rx.recv() => {}
                    _ = tokio::time::sleep(Duration::from_secs(3600)) => {}
                }
                exited.count_down();
            });
        }
        ready.wait().await;
        Tokio::run_blocking(|| std::thread::sleep(Duration::from_millis(50))).await;
        let m = Meter::start();
        Tokio::run_blocking(move || std::thread::sleep(Duration::from_millis(idle_ms))).await;
        let meas = m.stop();
        drop(txs); // every receiver sees None
        exited.wait().await;
        idle_out(idle_ms, meas).extra("timers", IDLE_TASKS as f64)
    }
}

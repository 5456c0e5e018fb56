//! goro's side of the time group's timer rows: `after_func_1000`, `after`,
//! `stop`, `simultaneous_after_func_1000`, `start_stop_1000`, `reset`,
//! `ticker`, `with_timeout/c=` and `timer_latency`, and goro's garbage
//! timers ([`TimeRt`] for [`Goro`]: `after_func(1h, noop)` from P tasks, as
//! Go). `time.rs` registers them and has the shapes, the op counts and the
//! rows written once for both runtimes; `time_tokio.rs` is tokio's side,
//! `bench/go/time.go` the Go twins.
//!
//! These rows are written once per runtime because tokio has no timer
//! handle, `after_func` or channel timer: each side uses its own runtime's
//! timer idiom, and `time.rs`'s module comment maps one to the other.

use super::per_worker;
use super::time::{
    noop, round2, run_parallel, TimeRt, CHAIN_LEN, GARBAGE_PER_P, HOUR, LATENCY_DELAY, LATENCY_GAP,
    LATENCY_SPIN_CAP, NS, WITH_TIMEOUT_BATCH,
};
use crate::registry::{Ctx, Meter, RunOut};
use crate::rt::{Goro, Latch, Rt};
use goro::chan::{bounded, Sender};
use goro::context::{Cancel, Context};
use goro::time::{after_func, Ticker, Timer};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

impl TimeRt for Goro {
    type Garbage = Vec<Vec<goro::time::Timer>>;
    async fn arm_garbage(procs: usize) -> Self::Garbage {
        let hs: Vec<_> = (0..procs)
            .map(|_| {
                goro::spawn(async {
                    (0..GARBAGE_PER_P)
                        .map(|_| goro::time::after_func(HOUR, noop))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let mut all = Vec::with_capacity(procs);
        for h in hs {
            all.push(h.await.expect("arming the garbage timers failed"));
        }
        all
    }
    async fn stop_garbage(g: Self::Garbage) {
        for t in g.iter().flatten() {
            t.stop();
        }
    }
}

/// One chain of after_func_1000: the count left and where to say done.
struct Chain {
    n: AtomicI64,
    done: Sender<bool>,
}

/// Go's `f`: decrement n; while n >= 0 re-arm `after_func(0, f)`, else
/// signal the chain's task.
fn chain_step(c: &Arc<Chain>) {
    if c.n.fetch_sub(1, Ordering::Relaxed) > 0 {
        // n was decremented and is still >= 0 (Go: `n--; if n >= 0`)
        let next = c.clone();
        drop(after_func(Duration::ZERO, move || chain_step(&next)));
    } else {
        let _ = c.done.try_send(true);
    }
}

/// after_func_1000 (Go: BenchmarkAfterFunc1000).
///
/// P tasks; each runs K chains. A chain: n = 1000; f decrements n and,
/// while n >= 0, does `after_func(0, f)`, else signals c; the task does
/// `after_func(0, f)` then receives from c. That is 1001 firings per
/// chain, counted as 1000 (Go's chain). One op = one after_func(0)
/// firing (arm, fire, callback task run). goro's after_func callback is
/// a plain `Fn()` and cannot block, so c has capacity 1 and the callback
/// does `try_send` where Go's callback goroutine blocks in `c <- true`
/// on an unbuffered channel (its receiver is already waiting, so both
/// hand the value straight to it). K = total/(P*1000).
/// Ops: 1,000,000 normal, 100,000 quick (rounded down to a multiple of P*1000).
pub async fn after_func_1000(ctx: Ctx) -> RunOut {
    let (k, ops) = per_worker(ctx.size(1_000_000, 100_000), ctx.procs as u64, CHAIN_LEN);
    run_parallel::<Goro, _, _>(&ctx, ops, move |_| async move {
        for _ in 0..k {
            let (tx, rx) = bounded::<bool>(1);
            let c = Arc::new(Chain {
                n: AtomicI64::new(CHAIN_LEN as i64),
                done: tx,
            });
            drop(after_func(Duration::ZERO, move || chain_step(&c)));
            rx.recv().await.unwrap();
        }
    })
    .await
    .extra("n", CHAIN_LEN as f64)
}

/// after (Go: BenchmarkAfter).
///
/// P tasks; each does K times `after(1ns).recv()`. One op = one
/// after(1ns) plus the receive of its tick. K = total/P.
/// Ops: 1,000,000 normal, 100,000 quick (rounded down to a multiple of P).
pub async fn after(ctx: Ctx) -> RunOut {
    let (k, ops) = per_worker(ctx.size(1_000_000, 100_000), ctx.procs as u64, 1);
    run_parallel::<Goro, _, _>(&ctx, ops, move |_| async move {
        for _ in 0..k {
            goro::time::after(NS).recv().await.unwrap();
        }
    })
    .await
}

/// stop (Go: BenchmarkStop, impl=chan).
///
/// P tasks; each does K times `Timer::new(1s).stop()`. One op = one
/// Timer::new(1s) plus its stop(). K = total/P.
/// Ops: 2,000,000 normal, 200,000 quick (rounded down to a multiple of P).
pub async fn stop(ctx: Ctx) -> RunOut {
    let (k, ops) = per_worker(ctx.size(2_000_000, 200_000), ctx.procs as u64, 1);
    run_parallel::<Goro, _, _>(&ctx, ops, move |_| async move {
        for _ in 0..k {
            Timer::new(Duration::from_secs(1)).stop();
        }
    })
    .await
}

/// simultaneous_after_func_1000 (Go: BenchmarkSimultaneousAfterFunc1000).
///
/// P tasks; each does K rounds of: a latch of 1000 (Go's WaitGroup);
/// 1000 times `after_func(0, wg.done)`; wait. One op = one after_func(0)
/// armed and fired (its callback task run). K = total/(P*1000).
/// Ops: 1,000,000 normal, 100,000 quick (rounded down to a multiple of P*1000).
pub async fn simultaneous_after_func_1000(ctx: Ctx) -> RunOut {
    let (k, ops) = per_worker(ctx.size(1_000_000, 100_000), ctx.procs as u64, CHAIN_LEN);
    run_parallel::<Goro, _, _>(&ctx, ops, move |_| async move {
        for _ in 0..k {
            let wg = Latch::new(CHAIN_LEN as usize);
            for _ in 0..CHAIN_LEN {
                let wg = wg.clone();
                drop(after_func(Duration::ZERO, move || wg.count_down()));
            }
            wg.wait().await;
        }
    })
    .await
    .extra("n", CHAIN_LEN as f64)
}

/// start_stop_1000 (Go: BenchmarkStartStop1000).
///
/// P tasks, each with its own Vec of 1000 timers (allocated once per
/// task, as the Go twin). K rounds of: 1000 times `after_func(1h, noop)`,
/// then stop() all 1000 (and drop the handles). One op = one
/// after_func(1h) plus its stop(). K = total/(P*1000).
/// Ops: 2,000,000 normal, 200,000 quick (rounded down to a multiple of P*1000).
pub async fn start_stop_1000(ctx: Ctx) -> RunOut {
    let (k, ops) = per_worker(ctx.size(2_000_000, 200_000), ctx.procs as u64, CHAIN_LEN);
    run_parallel::<Goro, _, _>(&ctx, ops, move |_| async move {
        let mut timers: Vec<Timer> = Vec::with_capacity(CHAIN_LEN as usize);
        for _ in 0..k {
            for _ in 0..CHAIN_LEN {
                timers.push(after_func(HOUR, noop));
            }
            for t in timers.drain(..) {
                t.stop();
            }
        }
    })
    .await
    .extra("n", CHAIN_LEN as f64)
}

/// reset (Go: BenchmarkReset, impl=chan).
///
/// P tasks; each does `t = Timer::new(1h)`, then K times `t.reset(1h)`,
/// then t.stop(). One op = one reset(1h). K = total/P.
/// Ops: 10,000,000 normal, 1,000,000 quick (rounded down to a multiple of P).
pub async fn reset(ctx: Ctx) -> RunOut {
    let (k, ops) = per_worker(ctx.size(10_000_000, 1_000_000), ctx.procs as u64, 1);
    run_parallel::<Goro, _, _>(&ctx, ops, move |_| async move {
        let t = Timer::new(HOUR);
        for _ in 0..k {
            t.reset(HOUR);
        }
        t.stop();
    })
    .await
}

/// ticker (Go: BenchmarkTicker).
///
/// P tasks; each does `tk = Ticker::new(1ns)` (inside the measured
/// region, as in Go), then K times `tk.rx().recv()`, then tk.stop().
/// One op = one tick received. K = total/P.
/// Ops: 2,000,000 normal, 200,000 quick (rounded down to a multiple of P).
pub async fn ticker(ctx: Ctx) -> RunOut {
    let (k, ops) = per_worker(ctx.size(2_000_000, 200_000), ctx.procs as u64, 1);
    run_parallel::<Goro, _, _>(&ctx, ops, move |_| async move {
        let tk = Ticker::new(NS);
        for _ in 0..k {
            tk.rx().recv().await.unwrap();
        }
        tk.stop();
    })
    .await
}

/// Creates `n` contexts with a one-hour timeout under `root`, keeping
/// each context with its cancel handle (goro's `Cancel` holds its
/// context weakly; Go's cancel func keeps it alive).
fn live_contexts(root: &Context, n: usize) -> Vec<(Context, Cancel)> {
    (0..n).map(|_| Context::with_timeout(root, HOUR)).collect()
}

/// with_timeout/c=C (Go: BenchmarkWithTimeout/concurrency=C).
///
/// Setup (before the clock, besides the garbage timers): P tasks each
/// create C/P live `Context::with_timeout(&background, 1h)` and keep
/// their cancel handles. Measured: P tasks (fresh ones) each do K times:
/// create 10 `Context::with_timeout(&background, 1h)`, then cancel the
/// 10 in creation order. After the clock, every live context is
/// cancelled. One op = one such round of 10 creates + 10 cancels (Go's
/// op). The contexts are kept next to their `Cancel` until cancelled:
/// goro's `Cancel` holds the context weakly, and cancelling after the
/// context is dropped does not stop its timer. K = total/P.
/// Ops: 100,000 normal, 10,000 quick (rounded down to a multiple of P),
/// for every C.
pub async fn with_timeout(ctx: Ctx, c: usize) -> RunOut {
    let p = ctx.procs;
    let (k, ops) = per_worker(ctx.size(100_000, 10_000), p as u64, 1);
    let per_p = c / p;
    let root = Context::background();
    let hs: Vec<_> = (0..p)
        .map(|_| {
            let root = root.clone();
            goro::spawn(async move { live_contexts(&root, per_p) })
        })
        .collect();
    let mut live = Vec::with_capacity(p);
    for h in hs {
        live.push(h.await.expect("creating the live contexts failed"));
    }

    let r = root.clone();
    let out = run_parallel::<Goro, _, _>(&ctx, ops, move |_| {
        let root = r.clone();
        async move {
            let mut wcf: Vec<(Context, Cancel)> = Vec::with_capacity(WITH_TIMEOUT_BATCH);
            for _ in 0..k {
                for _ in 0..WITH_TIMEOUT_BATCH {
                    wcf.push(Context::with_timeout(&root, HOUR));
                }
                for (cx, cancel) in wcf.drain(..) {
                    cancel.cancel();
                    drop(cx);
                }
            }
        }
    })
    .await;

    for (_, cancel) in live.iter().flatten() {
        cancel.cancel();
    }
    drop(live);
    out.extra("c", (per_p * p) as f64)
        .extra("batch", WITH_TIMEOUT_BATCH as f64)
}

/// One armer's lateness numbers, on its own cache line (as Go's bench).
#[repr(align(64))]
#[derive(Default)]
struct LateStat {
    sum: AtomicI64,
    max: AtomicI64,
    count: AtomicI64,
}

/// Busy-waits (no timers, no yielding) for `d` (Go's doWork).
fn spin_for(d: Duration) {
    let t0 = Instant::now();
    while t0.elapsed() < d {}
}

/// timer_latency (Go: BenchmarkParallelTimerLatency, simplified as the
/// Go twin).
///
/// Per round: k = P-1 armer tasks are spawned; each does
/// `expected = now + 1ms; after_func(1ms, cb)` and then spins (busy, never
/// yielding) until all k callbacks of the round have run, or 1 s has
/// passed (`spin_timeouts` counts those; the round still waits for the
/// callbacks). So the timers sit in the heaps of P-1 busy Ps while the
/// benchmark task is parked on a latch, leaving one P idle to run them.
/// The callback records late = max(0, now - expected) and counts down;
/// callbacks do not spin. Between rounds the benchmark task spins 1 ms
/// (Go's doWork(1ms)) so idle Ps go back to sleep. At P = 1: k = 1 and
/// the armer arms its timer and returns without spinning (plain 1 ms
/// timer lateness). One op = one timer (armed, fired, lateness
/// recorded); ns/op is about 2 ms and the metrics are the extras
/// `avg_late_ns` and `max_late_ns` over all timers of the run.
/// Ops: 200 rounds normal, 40 quick; ops = rounds × k.
pub async fn timer_latency(ctx: Ctx) -> RunOut {
    let rounds = ctx.size(200, 40);
    let (k, spin) = if ctx.procs > 1 {
        (ctx.procs - 1, true)
    } else {
        (1, false)
    };
    let stats: Arc<Vec<LateStat>> = Arc::new((0..k).map(|_| LateStat::default()).collect());
    let fired = Arc::new(AtomicI64::new(0));
    let spin_timeouts = Arc::new(AtomicI64::new(0));
    let garbage = Goro::arm_garbage(ctx.procs).await;

    let m = Meter::start();
    for _ in 0..rounds {
        let wg = Latch::new(2 * k); // k armers + k callbacks
        fired.store(0, Ordering::SeqCst);
        for j in 0..k {
            let (wg, stats, fired, spin_timeouts) = (
                wg.clone(),
                stats.clone(),
                fired.clone(),
                spin_timeouts.clone(),
            );
            Goro::spawn(async move {
                let expected = Instant::now() + LATENCY_DELAY;
                let (cwg, cfired) = (wg.clone(), fired.clone());
                drop(after_func(LATENCY_DELAY, move || {
                    let late = Instant::now()
                        .saturating_duration_since(expected)
                        .as_nanos() as i64;
                    let s = &stats[j];
                    s.count.fetch_add(1, Ordering::Relaxed);
                    s.sum.fetch_add(late, Ordering::Relaxed);
                    s.max.fetch_max(late, Ordering::Relaxed);
                    cfired.fetch_add(1, Ordering::SeqCst);
                    cwg.count_down();
                }));
                if spin {
                    let t0 = Instant::now();
                    while fired.load(Ordering::SeqCst) < k as i64 {
                        if t0.elapsed() > LATENCY_SPIN_CAP {
                            spin_timeouts.fetch_add(1, Ordering::Relaxed);
                            break;
                        }
                    }
                }
                wg.count_down();
            });
        }
        wg.wait().await;
        spin_for(LATENCY_GAP);
    }
    let meas = m.stop();
    Goro::stop_garbage(garbage).await;

    let (mut sum, mut count, mut max_late) = (0i64, 0i64, 0i64);
    for s in stats.iter() {
        sum += s.sum.load(Ordering::Relaxed);
        count += s.count.load(Ordering::Relaxed);
        max_late = max_late.max(s.max.load(Ordering::Relaxed));
    }
    RunOut::new(rounds * k as u64, meas)
        .extra("garbage_timers", (ctx.procs * GARBAGE_PER_P) as f64)
        .extra("avg_late_ns", round2(sum as f64 / count.max(1) as f64))
        .extra("max_late_ns", max_late as f64)
        .extra("rounds", rounds as f64)
        .extra("timers_per_round", k as f64)
        .extra(
            "spin_timeouts",
            spin_timeouts.load(Ordering::Relaxed) as f64,
        )
}

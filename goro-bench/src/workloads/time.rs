//! The time group of goro-bench/README.md (seed 001, per-P timers), after Go's
//! benchmarks in `time/sleep_test.go`, `time/tick_test.go` and
//! `context/benchmark_test.go`; shapes and op counts are those of
//! `bench/go/time.go` (read side by side). P below is procs.
//!
//! Every workload runs with 32,768 one-hour timers per P already armed
//! (garbage timers, as Go's `benchmark()` helper does): before the clock, P
//! tasks each arm 32,768 of them, and after the clock every one is stopped
//! ([`TimeRt::arm_garbage`] / [`TimeRt::stop_garbage`]). They are never due
//! during a run. goro: `after_func(1h, noop)` from P tasks, as Go. tokio:
//! one task per worker owns 32,768 `tokio::time::sleep(1h)` futures, polls
//! each once (a tokio `Sleep` is only put in the timer wheel when first
//! polled) and parks until they are dropped (tokio's stop).
//!
//! Parallel workloads (Go's RunParallel) split their ops over P tasks in
//! whole batches ([`per_worker`]); `ops` reports what was actually done.
//!
//! tokio's side, where it has the operation: tokio has no `Timer` handle, no
//! `AfterFunc` and no channel timer. Its timers are `Sleep` futures on a
//! wheel of 1 ms ticks: a deadline is rounded *up* to the next millisecond
//! tick, so a 0 or 1 ns timer waits for the next tick (about 1 ms) instead
//! of firing at once. Where the Go shape waits on such timers one after the
//! other (`after_func_1000`, `after`) one run would take about 100 s on
//! tokio (measured: `after` at 1.1 ms/op at procs=1, 0.56 ms/op at procs=2;
//! past the run deadline, and measuring the tick, not the timer code):
//! those rows have no tokio column, with the reason. Approximations,
//! noted on each workload: "arm a timer" = create a `Sleep` and poll it once;
//! "stop" = drop it; `after_func(d, f)` = `tokio::spawn(async { sleep(d).await; f() })`
//! where the callback must run (simultaneous_after_func_1000); a ticker =
//! `interval` with `MissedTickBehavior::Skip`. No tokio column for
//! `with_timeout` (no context tree) nor `timer_latency` (see its note).

use super::per_worker;
use crate::registry::{body, Ctx, Meter, RunOut, Workload};
use crate::rt::{Gang, Gate, Goro, Latch, Rt, Tokio};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

/// One-hour timers armed per P before each workload (Go's `garbagePerP`).
const GARBAGE_PER_P: usize = 1 << 15;
/// N in after_func_1000, simultaneous_after_func_1000, start_stop_1000 and
/// sleep_1000 (Go's `chainLen`).
const CHAIN_LEN: u64 = 1000;
/// Contexts one with_timeout op creates and cancels (Go's `withTimeoutBatch`).
const WITH_TIMEOUT_BATCH: usize = 10;
/// The live-context counts of `with_timeout/c=`.
const WITH_TIMEOUT_CS: [usize; 3] = [40, 4000, 400_000];
/// timer_latency: the timers' delay, the busy gap between rounds, and the
/// bound on an armer's spin (Go's latencyDelay, latencyGap, latencySpinCap).
const LATENCY_DELAY: Duration = Duration::from_millis(1);
const LATENCY_GAP: Duration = Duration::from_millis(1);
const LATENCY_SPIN_CAP: Duration = Duration::from_secs(1);

const HOUR: Duration = Duration::from_secs(3600);
const NS: Duration = Duration::from_nanos(1);

/// Why tokio has no column where its 1 ms tick would make the run ~1 ms per op.
const TOKIO_TICK: &str = "tokio's timer wheel rounds every deadline up to the next 1 ms tick, so this chain of 0/1 ns timers would wait ~1 ms per op (about 100 s a run; after measured 1.1 ms/op at procs=1): not comparable";

/// Registers the time group.
pub fn register(v: &mut Vec<Workload>) {
    let w =
        |name: &str, op: &str, ops: (u64, u64)| Workload::new(name, "time", op, ops).seed("001");
    v.push(
        w(
            "after_func_1000",
            "one after_func(0) firing, in chains of 1000 that re-arm from the callback (P tasks)",
            (1_000_000, 100_000),
        )
        .goro(Ok(body(goro_side::after_func_1000)))
        .tokio(Err(TOKIO_TICK)),
    );
    v.push(
        w(
            "after",
            "one after(1ns) plus the receive of its tick (P tasks)",
            (1_000_000, 100_000),
        )
        .goro(Ok(body(goro_side::after)))
        .tokio(Err(TOKIO_TICK)),
    );
    v.push(
        w(
            "stop",
            "one Timer::new(1s) then stop() (P tasks)",
            (2_000_000, 200_000),
        )
        .goro(Ok(body(goro_side::stop)))
        .tokio(Ok(body(tokio_side::stop))),
    );
    v.push(
        w(
            "simultaneous_after_func_1000",
            "one after_func(0, wg.done), 1000 armed at once then wait for all (P tasks); compared on CPU ns/op (tokio's wall is its 1 ms tick)",
            (1_000_000, 100_000),
        )
        .goro(Ok(body(goro_side::simultaneous_after_func_1000)))
        .tokio(Ok(body(tokio_side::simultaneous_after_func_1000))),
    );
    v.push(
        w(
            "start_stop_1000",
            "one after_func(1h) plus its stop(), 1000 armed then 1000 stopped (P tasks)",
            (2_000_000, 200_000),
        )
        .goro(Ok(body(goro_side::start_stop_1000)))
        .tokio(Ok(body(tokio_side::start_stop_1000))),
    );
    v.push(
        w(
            "reset",
            "one reset(1h) of a task's own timer (P tasks)",
            (10_000_000, 1_000_000),
        )
        .goro(Ok(body(goro_side::reset)))
        .tokio(Ok(body(tokio_side::reset))),
    );
    v.push(
        w(
            "sleep_1000",
            "one sleep(1ns) by one of 1000 tasks spawned at once, then wait for all (P spawners); compared on CPU ns/op (tokio's wall is its 1 ms tick)",
            (1_000_000, 100_000),
        )
        .goro(Ok(body(sleep_1000::<Goro>)))
        .tokio(Ok(body(sleep_1000::<Tokio>))),
    );
    v.push(
        w(
            "ticker",
            "one tick received from a task's own Ticker::new(1ns) (P tasks)",
            (2_000_000, 200_000),
        )
        .goro(Ok(body(goro_side::ticker)))
        .tokio(Ok(body(tokio_side::ticker))),
    );
    for c in WITH_TIMEOUT_CS {
        v.push(
            w(
                &format!("with_timeout/c={c}"),
                &format!("10 Context::with_timeout(bg, 1h) created then cancelled, with {c} such contexts live (P tasks)"),
                (100_000, 10_000),
            )
            .goro(Ok(body(move |ctx| goro_side::with_timeout(ctx, c))))
            .tokio(Err("not applicable, no tokio equivalent: tokio has no context tree with deadlines (Go's context.WithTimeout)")),
        );
    }
    v.push(
        w(
            "timer_latency",
            "one after_func(1ms) armed by a busy task, procs-1 per round; extra avg_late_ns, max_late_ns",
            (200, 40),
        )
        .goro(Ok(body(goro_side::timer_latency)))
        .tokio(Err("tokio has no after_func: a callback task spawned by a busy (spinning) task sits in that worker's LIFO slot, which is not stealable, and its sleep is only armed when first polled, so every round would hit the 1 s spin cap (measured: max_late 999 ms at procs=2)"))
        .show(&["avg_late_ns", "max_late_ns"]),
    );
    v.push(
        w(
            "sleep_fan",
            "one sleep(1ms), 10,000 tasks x 100 in a row; extra ideal_ns, overhead_ratio",
            (1_000_000, 10_000),
        )
        .goro(Ok(body(sleep_fan::<Goro>)))
        .tokio(Ok(body(sleep_fan::<Tokio>)))
        .show(&["overhead_ratio"]),
    );
}

fn noop() {}

/// Go's `round2`: rounded to two decimals.
fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// What the time workloads need from a runtime beyond [`Rt`]: the garbage
/// timers.
pub trait TimeRt: Rt {
    /// The armed garbage timers, for [`TimeRt::stop_garbage`].
    type Garbage: Send + 'static;
    /// Arms [`GARBAGE_PER_P`] one-hour timers from each of `procs` tasks
    /// (Go's `armGarbage`). Runs before the clock starts.
    fn arm_garbage(procs: usize) -> impl Future<Output = Self::Garbage> + Send;
    /// Stops every garbage timer (Go's `stopGarbage`). Runs after the clock stops.
    fn stop_garbage(g: Self::Garbage) -> impl Future<Output = ()> + Send;
}

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

/// tokio's garbage: the stop signal and the latch of the owning tasks.
pub struct TokioGarbage {
    stop: Gate,
    stopped: Latch,
}

/// Polls every sleep once (which puts it in tokio's timer wheel) with the
/// calling task's waker.
async fn arm_sleeps(sleeps: &mut [Pin<Box<tokio::time::Sleep>>]) {
    std::future::poll_fn(|cx| {
        for s in sleeps.iter_mut() {
            let _ = s.as_mut().poll(cx);
        }
        Poll::Ready(())
    })
    .await
}

impl TimeRt for Tokio {
    type Garbage = TokioGarbage;
    async fn arm_garbage(procs: usize) -> Self::Garbage {
        let stop = Gate::default();
        let armed = Latch::new(procs);
        let stopped = Latch::new(procs);
        for _ in 0..procs {
            let (stop, armed, stopped) = (stop.clone(), armed.clone(), stopped.clone());
            tokio::spawn(async move {
                let mut sleeps: Vec<Pin<Box<tokio::time::Sleep>>> = (0..GARBAGE_PER_P)
                    .map(|_| Box::pin(tokio::time::sleep(HOUR)))
                    .collect();
                arm_sleeps(&mut sleeps).await;
                armed.count_down();
                stop.wait().await;
                drop(sleeps); // deregisters every one
                stopped.count_down();
            });
        }
        armed.wait().await;
        TokioGarbage { stop, stopped }
    }
    async fn stop_garbage(g: Self::Garbage) {
        g.stop.open();
        g.stopped.wait().await;
    }
}

/// Go's `runParallel`: arm the garbage timers, park P tasks running
/// `body(i)`, time them from release to the last return, stop the garbage
/// timers, report `ops`.
async fn run_parallel<R, F, Fut>(ctx: &Ctx, ops: u64, body: F) -> RunOut
where
    R: TimeRt,
    F: Fn(usize) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let garbage = R::arm_garbage(ctx.procs).await;
    let g = Gang::new::<R, _, _>(ctx.procs, body).await;
    let m = Meter::start();
    g.release();
    g.wait().await;
    let meas = m.stop();
    R::stop_garbage(garbage).await;
    RunOut::new(ops, meas)
        .extra("goroutines", ctx.procs as f64)
        .extra("garbage_timers", (ctx.procs * GARBAGE_PER_P) as f64)
}

// ---------------------------------------------------------------------------
// Generic shapes (sleep and spawn only): the same code on goro and tokio.
// ---------------------------------------------------------------------------

/// sleep_1000 (Go: BenchmarkSleep1000).
///
/// P spawner tasks; each does K rounds of: a latch of 1000; spawn 1000 tasks
/// that each do `sleep(1ns)` then count down; wait. One op = one task
/// spawned that sleeps 1 ns and finishes. K = total/(P*1000). On tokio each
/// round's sleeps wait for the next 1 ms tick (see the module comment).
/// Ops: 1,000,000 normal, 100,000 quick (rounded down to a multiple of P*1000).
async fn sleep_1000<R: TimeRt>(ctx: Ctx) -> RunOut {
    let (k, ops) = per_worker(ctx.size(1_000_000, 100_000), ctx.procs as u64, CHAIN_LEN);
    run_parallel::<R, _, _>(&ctx, ops, move |_| async move {
        for _ in 0..k {
            let wg = Latch::new(CHAIN_LEN as usize);
            for _ in 0..CHAIN_LEN {
                let wg = wg.clone();
                R::spawn(async move {
                    R::sleep(NS).await;
                    wg.count_down();
                });
            }
            wg.wait().await;
        }
    })
    .await
    .extra("n", CHAIN_LEN as f64)
}

/// sleep_fan.
///
/// G tasks, spawned and parked before the clock starts; each does S times
/// `sleep(1ms)` in a row. Measured: from release until all G have returned.
/// One op = one sleep(1ms). The ideal wall time is S × 1 ms; extra
/// `ideal_ns` is that, `overhead_ratio` = wall_ns / ideal_ns.
/// Ops: 10,000 × 100 = 1,000,000 normal (ideal 100 ms), 1,000 × 10 = 10,000
/// quick (ideal 10 ms).
async fn sleep_fan<R: TimeRt>(ctx: Ctx) -> RunOut {
    let gs = ctx.size(10_000, 1_000);
    let sleeps = ctx.size(100, 10);
    let garbage = R::arm_garbage(ctx.procs).await;
    let g = Gang::new::<R, _, _>(gs as usize, move |_| async move {
        for _ in 0..sleeps {
            R::sleep(Duration::from_millis(1)).await;
        }
    })
    .await;
    let m = Meter::start();
    g.release();
    g.wait().await;
    let meas = m.stop();
    R::stop_garbage(garbage).await;
    let ideal = sleeps * 1_000_000;
    let wall = meas.wall_ns;
    RunOut::new(gs * sleeps, meas)
        .extra("garbage_timers", (ctx.procs * GARBAGE_PER_P) as f64)
        .extra("goroutines", gs as f64)
        .extra("sleeps_per_goroutine", sleeps as f64)
        .extra("ideal_ns", ideal as f64)
        .extra("overhead_ratio", round2(wall as f64 / ideal as f64))
}

// ---------------------------------------------------------------------------
// The timer rows, once per runtime: tokio has no timer handle, `after_func`
// or channel timer, so each side uses its own runtime's timer idiom (the
// module comment maps one to the other).
// ---------------------------------------------------------------------------

mod goro_side {
    use super::*;
    use goro::chan::{bounded, Sender};
    use goro::context::{Cancel, Context};
    use goro::time::{after_func, Ticker, Timer};

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
}

mod tokio_side {
    use super::*;
    use tokio::time::Sleep;

    /// Polls one sleep once: puts it in the timer wheel (tokio's "arm").
    async fn arm(s: Pin<&mut Sleep>) {
        let mut s = s;
        std::future::poll_fn(|cx| {
            let _ = s.as_mut().poll(cx);
            Poll::Ready(())
        })
        .await
    }

    /// stop: the goro shape (see there) with `Timer::new(1s).stop()` as a
    /// `sleep(1s)` pinned on the stack, polled once (armed), then dropped
    /// (deregistered).
    pub async fn stop(ctx: Ctx) -> RunOut {
        let (k, ops) = per_worker(ctx.size(2_000_000, 200_000), ctx.procs as u64, 1);
        run_parallel::<Tokio, _, _>(&ctx, ops, move |_| async move {
            for _ in 0..k {
                let s = std::pin::pin!(tokio::time::sleep(Duration::from_secs(1)));
                arm(s).await;
            }
        })
        .await
    }

    /// simultaneous_after_func_1000: the goro shape (see there) with
    /// `after_func(0, wg.done)` as `tokio::spawn(async { sleep(0).await;
    /// wg.done() })`. The 1000 sleeps of a round all wait for the next 1 ms
    /// tick (see the module comment), so a round takes about 1 ms.
    pub async fn simultaneous_after_func_1000(ctx: Ctx) -> RunOut {
        let (k, ops) = per_worker(ctx.size(1_000_000, 100_000), ctx.procs as u64, CHAIN_LEN);
        run_parallel::<Tokio, _, _>(&ctx, ops, move |_| async move {
            for _ in 0..k {
                let wg = Latch::new(CHAIN_LEN as usize);
                for _ in 0..CHAIN_LEN {
                    let wg = wg.clone();
                    tokio::spawn(async move {
                        tokio::time::sleep(Duration::ZERO).await;
                        wg.count_down();
                    });
                }
                wg.wait().await;
            }
        })
        .await
        .extra("n", CHAIN_LEN as f64)
    }

    /// start_stop_1000: the goro shape (see there) with
    /// `after_func(1h, noop)` as a boxed `sleep(1h)` polled once (armed) and
    /// `stop()` as dropping it. (A spawned sleeping task aborted later would
    /// measure spawn and abort, and its sleep would not even be armed
    /// before the abort.)
    pub async fn start_stop_1000(ctx: Ctx) -> RunOut {
        let (k, ops) = per_worker(ctx.size(2_000_000, 200_000), ctx.procs as u64, CHAIN_LEN);
        run_parallel::<Tokio, _, _>(&ctx, ops, move |_| async move {
            let mut timers: Vec<Pin<Box<Sleep>>> = Vec::with_capacity(CHAIN_LEN as usize);
            for _ in 0..k {
                for _ in 0..CHAIN_LEN {
                    let mut s = Box::pin(tokio::time::sleep(HOUR));
                    arm(s.as_mut()).await;
                    timers.push(s);
                }
                timers.clear();
            }
        })
        .await
        .extra("n", CHAIN_LEN as f64)
    }

    /// reset: the goro shape (see there) with `Timer::new(1h)` as a
    /// `sleep(1h)` polled once and `reset(1h)` as `Sleep::reset(now + 1h)`.
    pub async fn reset(ctx: Ctx) -> RunOut {
        let (k, ops) = per_worker(ctx.size(10_000_000, 1_000_000), ctx.procs as u64, 1);
        run_parallel::<Tokio, _, _>(&ctx, ops, move |_| async move {
            let mut s = std::pin::pin!(tokio::time::sleep(HOUR));
            arm(s.as_mut()).await;
            for _ in 0..k {
                s.as_mut().reset(tokio::time::Instant::now() + HOUR);
            }
        })
        .await
    }

    /// ticker: the goro shape (see there) with `Ticker::new(1ns)` as
    /// `tokio::time::interval(1ns)` with `MissedTickBehavior::Skip` (≈ Go's
    /// dropping of ticks for a slow reader), created inside the measured
    /// region, and a receive as `tick()`. tokio's interval keeps deadlines
    /// on a fixed 1 ns grid, so they fall behind the clock and tick at once;
    /// once they are more than 5 ms behind, Skip re-aligns the next one to
    /// now, which then waits for the next 1 ms tick of the wheel (about one
    /// such wait per 5 ms of ticking). Dropping the interval stops it.
    pub async fn ticker(ctx: Ctx) -> RunOut {
        let (k, ops) = per_worker(ctx.size(2_000_000, 200_000), ctx.procs as u64, 1);
        run_parallel::<Tokio, _, _>(&ctx, ops, move |_| async move {
            let mut tk = tokio::time::interval(NS);
            tk.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            for _ in 0..k {
                tk.tick().await;
            }
        })
        .await
    }
}
